// Forms drawn from a schema: a question's `form` (the flat JSON Schema subset MCP's
// elicitation uses, docs/protocol.md "Forms") and a workflow's parameters. Each field as
// what it is: text (an email, a URL, a date), a number with its bounds, a checkbox, one of
// a list (radio buttons, or a select past a few), several of a list (checkboxes).
//
// The server is the judge of the values: the form sends what was given, as its type, and
// shows a refusal beside the field its ErrorInfo names (`values.seats`). It never checks
// more than a type here, so what it says and what the server says cannot disagree.

import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { WorkflowParam } from "blitz-client";

export type FieldType = "string" | "number" | "integer" | "boolean" | "array";

export interface Field {
  name: string;
  type: FieldType;
  title: string;
  description: string;
  required: boolean;
  /** One of these (a string's), or several (an array's items). */
  choices: string[];
  /** What to show for each choice (`enumNames`), else the choice itself. */
  choiceNames: string[];
  format: string;
  minimum?: number;
  maximum?: number;
  default?: JsonValue;
}

/** What a person has typed or chosen, per field: text, a tick, or the choices ticked. */
export type Raw = Record<string, string | boolean | string[]>;

const TYPES = new Set<FieldType>(["string", "number", "integer", "boolean", "array"]);

function text(value: JsonValue | undefined): string {
  return typeof value === "string" ? value : "";
}

function num(value: JsonValue | undefined): number | undefined {
  return typeof value === "number" ? value : undefined;
}

function strings(value: JsonValue | undefined): string[] {
  return Array.isArray(value) ? value.map((v) => String(v)) : [];
}

/** A question's form as fields, in the order its properties come. */
export function formFields(schema: JsonObject): Field[] {
  const properties = (schema.properties ?? {}) as JsonObject;
  const listed = strings(schema.required);
  const required = new Set(listed);
  // A Struct keeps no order of its keys: the required fields come first, as `required`
  // lists them (an array keeps its order), then the others as they came.
  const entries = Object.entries(properties).sort(([a], [b]) => rank(listed, a) - rank(listed, b));
  return entries.map(([name, raw]) => {
    const spec = (raw ?? {}) as JsonObject;
    const items = (spec.items ?? {}) as JsonObject;
    const type = TYPES.has(spec.type as FieldType) ? (spec.type as FieldType) : "string";
    const choices = type === "array" ? strings(items.enum) : strings(spec.enum);
    const names = type === "array" ? strings(items.enumNames) : strings(spec.enumNames);
    return {
      name,
      type,
      title: text(spec.title),
      description: text(spec.description),
      required: required.has(name),
      choices,
      choiceNames: names.length === choices.length ? names : choices,
      format: text(spec.format),
      minimum: num(spec.minimum),
      maximum: num(spec.maximum),
      default: spec.default,
    };
  });
}

function rank(listed: string[], name: string): number {
  const at = listed.indexOf(name);
  return at < 0 ? listed.length : at;
}

/** A workflow's parameters as fields (`string`, `int`, `bool`, `enum`). */
export function paramFields(params: readonly WorkflowParam[]): Field[] {
  return params.map((param) => {
    const type: FieldType = param.type === "int" ? "integer" : param.type === "bool" ? "boolean" : "string";
    let value: JsonValue | undefined;
    if (param.hasDefault) value = type === "boolean" ? param.default === "true" : param.default;
    return {
      name: param.name,
      type,
      title: "",
      description: param.description,
      required: param.required,
      choices: param.type === "enum" ? [...param.values] : [],
      choiceNames: param.type === "enum" ? [...param.values] : [],
      format: "",
      default: value,
    };
  });
}

/** The fields' starting state: their defaults. */
export function initialRaw(fields: Field[]): Raw {
  const raw: Raw = {};
  for (const field of fields) {
    const given = field.default;
    if (field.type === "boolean") raw[field.name] = given === true;
    else if (field.type === "array") raw[field.name] = strings(given);
    else raw[field.name] = given === undefined || given === null ? "" : String(given);
  }
  return raw;
}

/** The values to send: each field given, as its type (a field left empty is left out,
 * so the server says when a required one is missing); or the first that is no value of
 * its type at all. */
export function collect(fields: Field[], raw: Raw): { values: JsonObject; wrong?: { field: string; text: string } } {
  const values: JsonObject = {};
  for (const field of fields) {
    const given = raw[field.name];
    if (field.type === "boolean") {
      // An unticked optional box is no answer; a required one is false.
      if (given === true || field.required) values[field.name] = given === true;
    } else if (field.type === "array") {
      if (Array.isArray(given) && given.length > 0) values[field.name] = given;
    } else {
      const value = typeof given === "string" ? given.trim() : "";
      if (!value) continue;
      if (field.type === "number" || field.type === "integer") {
        const number = Number(value);
        if (!Number.isFinite(number) || (field.type === "integer" && !Number.isInteger(number))) {
          return { values, wrong: { field: field.name, text: field.type === "integer" ? "A whole number, please." : "A number, please." } };
        }
        values[field.name] = number;
      } else if (field.format === "date-time") {
        const when = new Date(value);
        values[field.name] = Number.isNaN(when.getTime()) ? value : when.toISOString();
      } else {
        values[field.name] = value;
      }
    }
  }
  return { values };
}

/** The field a refusal names: `values.seats` → "seats" (`params.name` for a workflow's);
 * "" when it names the whole form. */
export function refusedField(field: string | undefined, prefix: "values" | "params"): string {
  if (!field?.startsWith(`${prefix}.`)) return "";
  return field.slice(prefix.length + 1).split(/[.[]/)[0];
}

const INPUT_TYPES: Record<string, "email" | "url" | "date" | "datetime-local"> = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

/** The fields, each with its label, required mark, hint and error. */
export function FormFields(props: {
  fields: Field[];
  raw: Raw;
  onChange: (name: string, value: string | boolean | string[]) => void;
  /** The error of each field, by name. */
  errors: Record<string, string>;
  /** Unique per form on the page: ids are made of it. */
  id: string;
}) {
  const { fields, raw, onChange, errors, id } = props;
  return (
    <div class="form-fields">
      {fields.map((field) => {
        const fid = `${id}-${field.name}`;
        const error = errors[field.name] ?? "";
        const label = field.title || field.name;
        const described = [field.description ? `${fid}-hint` : "", error ? `${fid}-error` : ""].filter(Boolean).join(" ") || undefined;
        const value = raw[field.name];
        const mark = field.required ? (
          <span class="required" title="required" aria-hidden="true">
            {" "}
            *
          </span>
        ) : null;
        let control;
        if (field.type === "boolean") {
          return (
            <div class="form-field check-field" key={field.name} data-field={field.name}>
              <label class="check">
                <input
                  id={fid}
                  type="checkbox"
                  checked={value === true}
                  onChange={(e) => onChange(field.name, e.currentTarget.checked)}
                  aria-invalid={!!error}
                  aria-describedby={described}
                />{" "}
                {label}
                {mark}
              </label>
              {field.description && (
                <div class="hint" id={`${fid}-hint`}>
                  {field.description}
                </div>
              )}
              {error && (
                <div class="error-line field-error" id={`${fid}-error`} role="alert">
                  {error}
                </div>
              )}
            </div>
          );
        }
        if (field.choices.length > 0 && (field.type === "array" || field.choices.length <= 5)) {
          const many = field.type === "array";
          const ticked = Array.isArray(value) ? value : typeof value === "string" && value ? [value] : [];
          control = (
            <fieldset class="options" id={fid} aria-invalid={!!error} aria-describedby={described} aria-required={field.required}>
              <legend>
                {label}
                {mark}
              </legend>
              {field.choices.map((choice, i) => (
                <label key={choice}>
                  <input
                    type={many ? "checkbox" : "radio"}
                    name={fid}
                    value={choice}
                    checked={ticked.includes(choice)}
                    onChange={(e) => {
                      const on = e.currentTarget.checked;
                      if (many) onChange(field.name, on ? [...ticked, choice] : ticked.filter((c) => c !== choice));
                      else onChange(field.name, on ? choice : "");
                    }}
                  />{" "}
                  {field.choiceNames[i]}
                </label>
              ))}
            </fieldset>
          );
        } else {
          let input;
          if (field.choices.length > 0) {
            input = (
              <select id={fid} value={String(value ?? "")} onChange={(e) => onChange(field.name, e.currentTarget.value)} aria-invalid={!!error} aria-describedby={described} aria-required={field.required}>
                <option value="">{field.required ? "choose…" : "(none)"}</option>
                {field.choices.map((choice, i) => (
                  <option key={choice} value={choice}>
                    {field.choiceNames[i]}
                  </option>
                ))}
              </select>
            );
          } else {
            const numeric = field.type === "number" || field.type === "integer";
            input = (
              <input
                id={fid}
                // One of text, number, email, url, date, datetime-local (Preact types each apart).
                type={(numeric ? "number" : (INPUT_TYPES[field.format] ?? "text")) as "text"}
                step={field.type === "integer" ? 1 : numeric ? "any" : undefined}
                min={field.minimum}
                max={field.maximum}
                value={String(value ?? "")}
                onInput={(e) => onChange(field.name, e.currentTarget.value)}
                aria-invalid={!!error}
                aria-describedby={described}
                aria-required={field.required}
                autoComplete="off"
              />
            );
          }
          const bounds =
            field.minimum !== undefined && field.maximum !== undefined
              ? ` (${field.minimum}–${field.maximum})`
              : field.minimum !== undefined
                ? ` (at least ${field.minimum})`
                : field.maximum !== undefined
                  ? ` (at most ${field.maximum})`
                  : "";
          control = (
            <>
              <label for={fid}>
                {label}
                {mark}
                {bounds && <span class="dim">{bounds}</span>}
              </label>
              {input}
            </>
          );
        }
        return (
          <div class="form-field" key={field.name} data-field={field.name}>
            {control}
            {field.description && (
              <div class="hint" id={`${fid}-hint`}>
                {field.description}
              </div>
            )}
            {error && (
              <div class="error-line field-error" id={`${fid}-error`} role="alert">
                {error}
              </div>
            )}
          </div>
        );
      })}
    </div>
  );
}
