// A session's mode (which actions go ahead without asking: docs/protocol.md, "Modes"),
// changed with UpdateSession, and the approval rules that apply to it (ListRules), each
// revocable (RevokeRule).

import { type Rule, RuleEffect, RuleMatchKind, RuleScope, type Session, SessionMode } from "blitz-client";
import { useEffect, useState } from "preact/hooks";
import { blitz, describe } from "./api.js";
import { ACTION_KINDS } from "./format.js";
import { Ticks } from "./items.js";
import { store } from "./store.js";

/** Every mode by the word a person reads (the compiler checks that a new one is named). */
export const MODES: Record<number, string> = {
  [SessionMode.ASK]: "ask",
  [SessionMode.ACCEPT_EDITS]: "accept edits",
  [SessionMode.READ_ONLY]: "read-only",
  [SessionMode.PLAN]: "plan",
  [SessionMode.BYPASS]: "bypass",
} satisfies Record<Exclude<SessionMode, SessionMode.UNSPECIFIED>, string>;

const MODE_HINTS: Record<number, string> = {
  [SessionMode.ASK]: "every write, delete, command and fetch asks first",
  [SessionMode.ACCEPT_EDITS]: "file changes go ahead; commands and fetches ask",
  [SessionMode.READ_ONLY]: "writes, deletes and commands are refused",
  [SessionMode.PLAN]: "the agent only reads, and ends with a plan",
  [SessionMode.BYPASS]: "everything goes ahead (only where the operator allows it)",
};

/** The session's mode, as a select that changes it. */
export function ModePicker({ session }: { session: Session }) {
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const mode = session.mode || SessionMode.ASK;
  async function change(next: SessionMode) {
    setBusy(true);
    setError("");
    try {
      store.put(await blitz.sessions.updateSession({ sessionId: session.id, mode: next, updateMask: { paths: ["mode"] } }));
    } catch (thrown) {
      setError(describe(thrown));
    } finally {
      setBusy(false);
    }
  }
  return (
    <span class="mode">
      <label title={MODE_HINTS[mode]}>
        mode{" "}
        <select value={mode} disabled={busy} onChange={(e) => change(Number(e.currentTarget.value) as SessionMode)} aria-label="Mode" data-testid="session-mode">
          {Object.entries(MODES).map(([value, word]) => (
            <option key={value} value={value} title={MODE_HINTS[Number(value)]}>
              {word}
            </option>
          ))}
        </select>
      </label>
      {error && (
        <span class="error-line" role="alert">
          {" "}
          {error}
        </span>
      )}
    </span>
  );
}

/** What a rule covers, in words: "commands starting `pytest -q`", "write: notes.txt". */
export function ruleWords(rule: Rule): string {
  if (rule.match === RuleMatchKind.RULE_MATCH_COMMAND_PREFIX) return `commands starting \`${rule.pattern}\``;
  if (rule.match === RuleMatchKind.RULE_MATCH_PATH_GLOB) return `${ACTION_KINDS[rule.kind]?.toLowerCase() ?? "paths"} matching \`${rule.pattern}\``;
  return rule.scopeLabel || rule.pattern;
}

/** The rules that apply to the session, newest first, each with a revoke button. */
export function RulesPanel({ sessionId, onClose }: { sessionId: string; onClose: () => void }) {
  const [rules, setRules] = useState<Rule[]>();
  const [error, setError] = useState("");
  async function load() {
    setError("");
    try {
      const answer = await blitz.sessions.listRules({ sessionId });
      setRules([...answer.rules].reverse());
    } catch (thrown) {
      setError(describe(thrown));
    }
  }
  useEffect(() => {
    void load();
  }, [sessionId]);
  async function revoke(rule: Rule) {
    setError("");
    try {
      await blitz.sessions.revokeRule({ sessionId, ruleId: rule.id });
      await load();
    } catch (thrown) {
      setError(describe(thrown));
    }
  }
  return (
    <section class="rules panel" aria-label="Approval rules">
      <div class="panel-head">
        <strong>Rules</strong>
        <span class="dim"> that approve (or deny) without asking</span>
        <span class="spacer" />
        <button type="button" class="link" onClick={load}>
          refresh
        </button>
        <button type="button" class="link" onClick={onClose}>
          close
        </button>
      </div>
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
      {rules && rules.length === 0 && <p class="dim">No rule applies to this session: each action asks (as its mode says).</p>}
      {rules && rules.length > 0 && (
        <ul class="rule-list">
          {rules.map((rule) => (
            <li key={rule.id} data-rule={rule.id}>
              <span class={`effect ${rule.effect === RuleEffect.DENY ? "bad" : "good"}`}>{rule.effect === RuleEffect.DENY ? "deny" : "allow"}</span>{" "}
              <Ticks text={ruleWords(rule)} />{" "}
              <span class="dim">
                {rule.scope === RuleScope.ALWAYS ? "· always (your sessions in this workspace)" : "· this session"}
                {rule.expireTime ? ` · until ${new Date(Number(rule.expireTime.seconds) * 1000).toLocaleString()}` : ""}
              </span>{" "}
              <button type="button" class="link deny" onClick={() => revoke(rule)} aria-label={`revoke ${ruleWords(rule).replaceAll("`", "")}`}>
                revoke
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
