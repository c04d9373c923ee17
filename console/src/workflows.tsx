// Running a workflow (docs/workflows.md) from the page: the session's workflows
// (ListWorkflows), one chosen and its parameters drawn as a form (GetWorkflow), then run
// (RunWorkflow) as a turn of the session. Its progress is the log's: a line per step from
// its `flow_step` events (items.tsx).

import { BlitzError, newTurnId, type TurnEvent, type Workflow } from "blitz-client";
import { useEffect, useMemo, useState } from "preact/hooks";
import { blitz, describe } from "./api.js";
import { collect, type Field, FormFields, initialRaw, paramFields, type Raw, refusedField } from "./forms.js";

export function WorkflowRunner(props: {
  sessionId: string;
  /** Starts the run (as the composer starts a turn) and lets go once it is accepted. */
  start: (open: (signal: AbortSignal) => AsyncIterable<TurnEvent>) => Promise<void>;
  onStarted: () => void;
  onClose: () => void;
}) {
  const { sessionId } = props;
  const [workflows, setWorkflows] = useState<Workflow[]>();
  const [name, setName] = useState("");
  const [chosen, setChosen] = useState<Workflow>();
  const [raw, setRaw] = useState<Raw>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    blitz.workflows
      .listWorkflows({ sessionId })
      .then((answer) => {
        setWorkflows(answer.workflows);
        const runnable = answer.workflows.find((w) => !w.error);
        if (runnable) setName(runnable.name);
      })
      .catch((thrown) => setError(describe(thrown)));
  }, [sessionId]);

  useEffect(() => {
    setChosen(undefined);
    setErrors({});
    setError("");
    if (!name) return;
    let current = true;
    blitz.workflows
      .getWorkflow({ sessionId, name })
      .then((workflow) => {
        if (!current) return;
        setChosen(workflow);
        setRaw(initialRaw(paramFields(workflow.params)));
      })
      .catch((thrown) => current && setError(describe(thrown)));
    return () => {
      current = false;
    };
  }, [sessionId, name]);

  const fields: Field[] = useMemo(() => (chosen ? paramFields(chosen.params) : []), [chosen]);

  async function run(event: Event) {
    event.preventDefault();
    if (!chosen || busy) return;
    setErrors({});
    setError("");
    const { values, wrong } = collect(fields, raw);
    if (wrong) return setErrors({ [wrong.field]: wrong.text });
    const params = Object.fromEntries(Object.entries(values).map(([key, value]) => [key, String(value)]));
    setBusy(true);
    try {
      await props.start((signal) => blitz.workflows.runWorkflow({ sessionId, name: chosen.name, params, turnId: newTurnId() }, { signal }));
      props.onStarted();
    } catch (thrown) {
      const e = BlitzError.from(thrown);
      const field = refusedField(e.metadata.field, "params") || (e.metadata.param ?? "");
      if (field && fields.some((f) => f.name === field)) setErrors({ [field]: describe(e) });
      else setError(describe(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="workflow-runner panel" onSubmit={run} aria-label="Run a workflow" noValidate>
      <div class="panel-head">
        <strong>Run a workflow</strong>
        <span class="spacer" />
        <button type="button" class="link" onClick={props.onClose}>
          close
        </button>
      </div>
      {workflows && workflows.length === 0 && <p class="dim">This session has no workflow: put one in its workspace's .blitz/workflows/ (docs/workflows.md).</p>}
      {workflows && workflows.length > 0 && (
        <label>
          workflow{" "}
          <select value={name} onChange={(e) => setName(e.currentTarget.value)} aria-label="Workflow">
            {workflows.map((w) => (
              <option key={w.name} value={w.name} disabled={!!w.error}>
                {w.title || w.name}
                {w.version ? ` (${w.name}@${w.version})` : ""}
                {w.error ? ` — cannot run: ${w.error.message}` : ""}
              </option>
            ))}
          </select>
        </label>
      )}
      {chosen && (
        <>
          {chosen.description && <p class="dim workflow-description">{chosen.description}</p>}
          {chosen.steps.length > 0 && (
            <ol class="workflow-steps" aria-label="Steps">
              {chosen.steps.map((step) => (
                <li key={step.id}>
                  {step.title || step.id} <span class="dim">({step.type})</span>
                </li>
              ))}
            </ol>
          )}
          <FormFields fields={fields} raw={raw} errors={errors} id={`wf-${chosen.name}`} onChange={(key, value) => setRaw((now) => ({ ...now, [key]: value }))} />
          <div class="actions">
            <button type="submit" disabled={busy}>
              {busy ? "starting…" : "run"}
            </button>
          </div>
        </>
      )}
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
    </form>
  );
}
