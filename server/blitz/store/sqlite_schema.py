"""The SQLite engine's schema, as the list of migrations that builds it.

The file's `user_version` is how many entries have run; opening a file runs the rest, each
in one transaction. Never edit a released entry: append one.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS"]

MIGRATIONS: list[str] = [
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        title TEXT NOT NULL,
        workspace TEXT NOT NULL,
        model TEXT NOT NULL,
        labels TEXT NOT NULL,
        state INTEGER NOT NULL,
        create_time REAL NOT NULL,
        update_time REAL NOT NULL,
        turn_id TEXT NOT NULL DEFAULT '',
        history BLOB
    );
    CREATE INDEX sessions_by_owner ON sessions (owner, create_time DESC, id DESC);
    CREATE TABLE turns (
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        state TEXT NOT NULL,
        turn BLOB NOT NULL,
        create_time REAL NOT NULL,
        deadline REAL,
        first_seq INTEGER NOT NULL,
        model_calls INTEGER NOT NULL,
        cost_usd REAL NOT NULL,
        steer TEXT NOT NULL,
        history BLOB,
        usage_before BLOB NOT NULL,
        PRIMARY KEY (session_id, turn_id)
    ) WITHOUT ROWID;
    CREATE INDEX turns_by_state ON turns (state);
    CREATE TABLE events (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        turn_id TEXT NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE pending (
        session_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        event BLOB NOT NULL,
        expires REAL,
        resolution TEXT,
        PRIMARY KEY (session_id, request_id)
    ) WITHOUT ROWID;
    CREATE TABLE ledger (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        model TEXT NOT NULL,
        input INTEGER NOT NULL,
        cached INTEGER NOT NULL,
        cache_write INTEGER NOT NULL,
        output INTEGER NOT NULL,
        cost_usd REAL NOT NULL,
        priced INTEGER NOT NULL,
        search_queries INTEGER NOT NULL,
        search_cost_usd REAL NOT NULL,
        time REAL NOT NULL
    );
    CREATE INDEX ledger_by_session ON ledger (session_id, id);
    """,
    """
    ALTER TABLE sessions ADD COLUMN approval_timeout REAL;
    CREATE TABLE rules (
        id TEXT PRIMARY KEY,
        scope INTEGER NOT NULL,
        kind INTEGER NOT NULL,
        scope_label TEXT NOT NULL,
        session_id TEXT NOT NULL,
        workspace TEXT NOT NULL,
        caller TEXT NOT NULL,
        create_time REAL NOT NULL,
        request_id TEXT NOT NULL
    );
    CREATE INDEX rules_by_session ON rules (session_id);
    CREATE INDEX rules_by_workspace ON rules (caller, workspace);
    """,
    """
    ALTER TABLE sessions ADD COLUMN tasks BLOB;
    ALTER TABLE sessions ADD COLUMN plan BLOB;
    CREATE TABLE images (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        media_type TEXT NOT NULL,
        data BLOB NOT NULL,
        create_time REAL NOT NULL
    );
    CREATE INDEX images_by_session ON images (session_id);
    """,
    """
    -- The message history gets a table of its own: a session's row is updated at every
    -- turn's start and end, and SQLite rewrites a whole row, blob included, each time.
    CREATE TABLE histories (
        session_id TEXT PRIMARY KEY,
        history BLOB NOT NULL
    );
    INSERT INTO histories (session_id, history)
        SELECT id, history FROM sessions WHERE history IS NOT NULL;
    ALTER TABLE sessions DROP COLUMN history;
    """,
    """
    CREATE TABLE tokens (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        admin INTEGER NOT NULL,
        create_time REAL NOT NULL,
        revoke_time REAL
    );
    CREATE INDEX tokens_by_name ON tokens (name);
    """,
    """
    -- Turns are held on leases and fenced by epoch; cancels and steer reach their holder
    -- through the store (see store/base.py).
    ALTER TABLE turns ADD COLUMN owner TEXT NOT NULL DEFAULT '';
    ALTER TABLE turns ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE turns ADD COLUMN lease_until REAL;
    ALTER TABLE turns ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE turns ADD COLUMN steer_open INTEGER NOT NULL DEFAULT 1;
    CREATE INDEX turns_by_owner ON turns (owner) WHERE owner <> '';
    ALTER TABLE pending ADD COLUMN resolve_time REAL;
    """,
    """
    -- A session's history as each of its turns left it, so that a fork can start from
    -- any finished turn; and each file the agent changed, as it was before the session
    -- first changed it (GetDiff).
    CREATE TABLE turn_histories (
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        history BLOB NOT NULL,
        PRIMARY KEY (session_id, turn_id)
    );
    CREATE TABLE file_originals (
        session_id TEXT NOT NULL,
        path TEXT NOT NULL,
        content BLOB,
        PRIMARY KEY (session_id, path)
    );
    CREATE INDEX turns_by_time ON turns (session_id, create_time, turn_id);
    CREATE INDEX ledger_by_turn ON ledger (session_id, turn_id);
    """,
    """
    -- Unknown is not zero: a call whose provider reported no token counts says so.
    ALTER TABLE ledger ADD COLUMN tokens_unknown INTEGER NOT NULL DEFAULT 0;
    """,
    """
    -- Each principal's workspace names, and the folder each stands for: a name belongs to
    -- the principal that first used it. Names already in use keep their folders (a name
    -- two principals shared before stays shared by those two; new ones are not).
    CREATE TABLE workspace_names (
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        folder TEXT NOT NULL,
        PRIMARY KEY (owner, name)
    );
    INSERT OR IGNORE INTO workspace_names (owner, name, folder)
        SELECT owner, workspace, workspace FROM sessions
        WHERE owner <> '' AND workspace <> id ORDER BY create_time;
    """,
    """
    -- Rules that match more than a label (a command's prefix, a path's glob), that deny,
    -- and that end.
    ALTER TABLE rules ADD COLUMN match_kind INTEGER NOT NULL DEFAULT 1;
    -- A session's mode (blitz.v1.SessionMode: 1 is ASK).
    ALTER TABLE sessions ADD COLUMN mode INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE rules ADD COLUMN pattern TEXT NOT NULL DEFAULT '';
    ALTER TABLE rules ADD COLUMN effect INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE rules ADD COLUMN expire_time REAL;
    """,
    """
    -- Turns queued behind their session's (BUSY_STRATEGY_ENQUEUE): each one's place.
    ALTER TABLE turns ADD COLUMN queued REAL;
    """,
    """
    -- Webhooks (docs/webhooks.md): the subscriptions; the outbox, one row per stored event a
    -- webhook may be told of, written in the transaction that stores the event; and the
    -- deliveries each row becomes, one per webhook it goes to, with their latest attempts.
    CREATE TABLE webhooks (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        url TEXT NOT NULL,
        events TEXT NOT NULL,
        labels TEXT NOT NULL,
        session_id TEXT NOT NULL,
        description TEXT NOT NULL,
        format INTEGER NOT NULL,
        state INTEGER NOT NULL,
        state_reason TEXT NOT NULL,
        server_wide INTEGER NOT NULL,
        declared TEXT NOT NULL,
        secret TEXT NOT NULL,
        previous_secret TEXT NOT NULL,
        previous_until REAL,
        failures INTEGER NOT NULL,
        create_time REAL NOT NULL,
        update_time REAL NOT NULL
    );
    CREATE INDEX webhooks_by_owner ON webhooks (owner, create_time);
    CREATE TABLE webhook_outbox (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        kind TEXT NOT NULL,
        time REAL NOT NULL
    );
    CREATE INDEX webhook_outbox_by_session ON webhook_outbox (session_id, seq);
    CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        webhook_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        body BLOB NOT NULL,
        state TEXT NOT NULL,
        tries INTEGER NOT NULL,
        attempts TEXT NOT NULL,
        next_attempt REAL NOT NULL,
        deadline REAL NOT NULL,
        event_time REAL NOT NULL,
        create_time REAL NOT NULL,
        lease_owner TEXT NOT NULL DEFAULT '',
        lease_until REAL
    );
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt)
        WHERE state = 'pending';
    CREATE INDEX webhook_deliveries_in_order ON webhook_deliveries (webhook_id, session_id, seq)
        WHERE state = 'pending';
    CREATE INDEX webhook_deliveries_by_webhook
        ON webhook_deliveries (webhook_id, create_time DESC, id DESC);
    """,
    """
    -- Workspace checkpoints, for RewindSession and ForkSession: what a turn's files were at
    -- its start and its end (a manifest, zlib-compressed JSON; NULL: an end the same as
    -- its start), and the content of each file they hold, by hash, once per session.
    CREATE TABLE checkpoints (
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        at TEXT NOT NULL,
        manifest BLOB,
        create_time REAL NOT NULL,
        PRIMARY KEY (session_id, turn_id, at)
    );
    CREATE TABLE checkpoint_blobs (
        session_id TEXT NOT NULL,
        hash TEXT NOT NULL,
        content BLOB NOT NULL,
        PRIMARY KEY (session_id, hash)
    );
    """,
    """
    -- Workflow runs (blitz.core.workflows.workflow_runs): a run's state, its current step,
    -- attempt and finished steps' outputs as JSON, written with each of its flow_step events.
    CREATE TABLE workflow_runs (
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        state BLOB NOT NULL,
        update_time REAL NOT NULL,
        PRIMARY KEY (session_id, turn_id)
    );
    """,
    """
    -- The repository a session's workspace was cloned from (a serialized
    -- blitz.v1.Repository); NULL: a plain folder.
    ALTER TABLE sessions ADD COLUMN repository BLOB;
    """,
    """
    -- The server's own keys, by name (`links`: what approval links are signed with,
    -- blitz.core.links), made by the first process that needs one and never sent anywhere.
    -- Deleting a row rotates its key at the next start.
    CREATE TABLE server_keys (
        name TEXT PRIMARY KEY,
        key BLOB NOT NULL,
        create_time REAL NOT NULL
    );
    """,
    """
    -- Schedules (blitz.core.schedules): each one's spec (a serialized blitz.v1.Schedule of
    -- what its owner asked) and its next tick (NULL while paused); and a row per firing,
    -- keyed by its tick, so that a tick is fired once whichever process claims it.
    CREATE TABLE schedules (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        spec BLOB NOT NULL,
        state INTEGER NOT NULL,
        next_fire REAL,
        anchor REAL NOT NULL,
        create_time REAL NOT NULL,
        update_time REAL NOT NULL
    );
    CREATE INDEX schedules_by_owner ON schedules (owner, create_time, id);
    CREATE INDEX schedules_due ON schedules (next_fire) WHERE state = 1;
    CREATE TABLE schedule_firings (
        schedule_id TEXT NOT NULL,
        tick_time REAL NOT NULL,
        fire_time REAL NOT NULL,
        via TEXT NOT NULL,
        holder TEXT NOT NULL,
        state TEXT NOT NULL,
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        error TEXT NOT NULL,
        PRIMARY KEY (schedule_id, tick_time)
    );
    CREATE INDEX schedule_firings_firing ON schedule_firings (fire_time) WHERE state = 'firing';
    """,
    """
    -- Hooks made through HookService (blitz.core.hooks, docs/hooks.md): each one's spec is
    -- a serialized blitz.v1.Hook (its event, command or URL, matchers, timeout, fail_open,
    -- description, disabled); an HTTP hook's signing secret ('' for a command hook). The
    -- operator's declared hooks are never stored.
    CREATE TABLE hooks (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        server_wide INTEGER NOT NULL,
        spec BLOB NOT NULL,
        secret TEXT NOT NULL,
        create_time REAL NOT NULL,
        update_time REAL NOT NULL
    );
    CREATE INDEX hooks_by_owner ON hooks (owner, create_time);
    """,
]
