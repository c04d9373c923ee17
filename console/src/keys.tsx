// The page's keys, and the dialog that lists them (`?`). The keys of a request work where
// the request has the focus (items.tsx); these work anywhere but in a field.

import { useEffect, useRef } from "preact/hooks";

/** Every key the console knows, as the help dialog lists them. */
export const KEYS: { where: string; keys: [string, string][] }[] = [
  {
    where: "Anywhere",
    keys: [
      ["?", "this list"],
      ["/", "search the sessions (in a session: find in its log)"],
      ["Esc", "close a dialog, or leave a reply"],
    ],
  },
  {
    where: "An approval (it takes the focus when it arrives)",
    keys: [
      ["o", "approve once"],
      ["s", "approve for the session"],
      ["a", "approve always (your sessions in this workspace)"],
      ["r", "always allow what the suggested rule covers"],
      ["d", "deny, with a reason the model receives (Enter sends)"],
      ["x", "deny and stop the turn"],
      ["e", "edit the command, then run it once"],
    ],
  },
  {
    where: "A question",
    keys: [
      ["1–9", "choose that option"],
      ["Enter", "answer"],
    ],
  },
  {
    where: "The composer",
    keys: [
      ["Ctrl+Enter, ⌘+Enter", "send (Enter alone is a new line)"],
    ],
  },
];

/** Whether a key press belongs to a field being typed in. */
export function typing(event: KeyboardEvent): boolean {
  const target = event.target as HTMLElement | null;
  if (!target) return false;
  return target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName);
}

/** The dialog of keys, shown while `open`. */
export function KeysDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) element.showModal();
    if (!open && element.open) element.close();
  }, [open]);
  return (
    <dialog ref={dialog} class="dialog keys" aria-label="Keyboard shortcuts" onClose={onClose}>
      <h2>Keys</h2>
      {KEYS.map((group) => (
        <section key={group.where}>
          <h3>{group.where}</h3>
          <dl>
            {group.keys.map(([key, what]) => (
              <div key={key} class="key-row">
                <dt>
                  <kbd>{key}</kbd>
                </dt>
                <dd>{what}</dd>
              </div>
            ))}
          </dl>
        </section>
      ))}
      <div class="actions">
        <button type="button" onClick={onClose} autoFocus>
          close
        </button>
      </div>
    </dialog>
  );
}
