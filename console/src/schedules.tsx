// The caller's schedules (docs/schedules.md), shown where no session is open: when each
// fires, whether it is paused, its next tick and its last firing, which opens the session
// it started. ListSchedules, read when shown and every 30 s; nothing here changes one (the
// CLI and the SDK do). Text from the server is rendered as text.

import { BlitzError, type Schedule, ScheduleState } from "blitz-client";
import { useEffect, useState } from "preact/hooks";
import { blitz, describe } from "./api.js";

const REFRESH_MS = 30_000;

function when(schedule: Schedule): string {
  if (schedule.when.case === "cron") {
    return `cron ${schedule.when.value}${schedule.timeZone ? ` (${schedule.timeZone})` : ""}`;
  }
  if (schedule.when.case === "every") return `every ${Number(schedule.when.value.seconds)} s`;
  return "";
}

function what(schedule: Schedule): string {
  if (schedule.what.case === "workflow") return `workflow ${schedule.what.value.name}`;
  return schedule.what.case === "prompt" ? schedule.what.value : "";
}

function moment(seconds: bigint | undefined): string {
  return seconds ? new Date(Number(seconds) * 1000).toLocaleString() : "—";
}

export function ScheduleList({ onOpen }: { onOpen: (sessionId: string) => void }) {
  const [schedules, setSchedules] = useState<Schedule[]>();
  const [error, setError] = useState("");
  useEffect(() => {
    let stopped = false;
    const read = () =>
      blitz.schedules
        .listSchedules({})
        .then((answer) => !stopped && (setSchedules(answer.schedules), setError("")))
        .catch((thrown) => {
          // A server from before schedules has no ScheduleService: show nothing.
          if (!stopped && !(thrown instanceof BlitzError && thrown.code === "unimplemented")) setError(describe(thrown));
        });
    void read();
    const timer = setInterval(read, REFRESH_MS);
    return () => ((stopped = true), clearInterval(timer));
  }, []);
  if (error) return <p class="error-line">{error}</p>;
  if (!schedules || schedules.length === 0) return null;
  return (
    <section class="schedules" aria-label="Schedules">
      <h2>Schedules</h2>
      <table>
        <thead>
          <tr>
            <th>title</th>
            <th>when</th>
            <th>runs</th>
            <th>state</th>
            <th>next</th>
            <th>last</th>
          </tr>
        </thead>
        <tbody>
          {schedules.map((schedule) => {
            const last = schedule.lastFiring;
            return (
              <tr key={schedule.id} data-schedule={schedule.id}>
                <td>{schedule.title || schedule.id}</td>
                <td>{when(schedule)}</td>
                <td class="dim">{what(schedule)}</td>
                <td>{schedule.state === ScheduleState.PAUSED ? "paused" : "active"}</td>
                <td>{moment(schedule.nextFireTime?.seconds)}</td>
                <td>
                  {last ? (
                    last.error ? (
                      <span class="bad" title={last.error}>
                        {moment(last.tickTime?.seconds)} failed
                      </span>
                    ) : (
                      <button type="button" class="link" onClick={() => onOpen(last.sessionId)}>
                        {moment(last.tickTime?.seconds)}
                      </button>
                    )
                  ) : (
                    "—"
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
