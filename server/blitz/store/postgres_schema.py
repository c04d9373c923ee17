"""The PostgreSQL engine's schema, as the list of migrations that builds it.

`blitz_schema.version` says how many entries have run; opening a database runs the rest,
each in one transaction, under an advisory lock so that replicas starting together migrate
once. Never edit a released entry: append one.
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
        labels JSONB NOT NULL,
        state INTEGER NOT NULL,
        create_time DOUBLE PRECISION NOT NULL,
        update_time DOUBLE PRECISION NOT NULL,
        turn_id TEXT NOT NULL DEFAULT '',
        approval_timeout DOUBLE PRECISION,
        tasks BYTEA,
        plan BYTEA
    );
    CREATE INDEX sessions_by_owner ON sessions (owner, create_time DESC, id DESC);
    CREATE INDEX sessions_by_time ON sessions (create_time DESC, id DESC);
    -- Each session's last seq: the row the appenders of one session queue on.
    CREATE TABLE session_seqs (
        session_id TEXT PRIMARY KEY,
        last_seq BIGINT NOT NULL
    );
    CREATE TABLE turns (
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        state TEXT NOT NULL,
        turn BYTEA NOT NULL,
        create_time DOUBLE PRECISION NOT NULL,
        deadline DOUBLE PRECISION,
        first_seq BIGINT NOT NULL,
        model_calls INTEGER NOT NULL,
        cost_usd DOUBLE PRECISION NOT NULL,
        steer JSONB NOT NULL,
        history BYTEA,
        usage_before BYTEA NOT NULL,
        -- Held on a lease by one replica while running, fenced by epoch (store/base.py).
        owner TEXT NOT NULL DEFAULT '',
        epoch INTEGER NOT NULL DEFAULT 0,
        lease_until DOUBLE PRECISION,
        cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
        steer_open BOOLEAN NOT NULL DEFAULT TRUE,
        PRIMARY KEY (session_id, turn_id)
    );
    CREATE INDEX turns_unfinished ON turns (state) WHERE state <> 'finished';
    CREATE INDEX turns_by_owner ON turns (owner) WHERE owner <> '';
    CREATE TABLE events (
        session_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        turn_id TEXT NOT NULL,
        data BYTEA NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE INDEX events_by_turn ON events (session_id, turn_id, seq);
    CREATE TABLE pending (
        session_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        event BYTEA NOT NULL,
        expires DOUBLE PRECISION,
        resolution TEXT,
        resolve_time DOUBLE PRECISION,
        PRIMARY KEY (session_id, request_id)
    );
    CREATE INDEX pending_by_turn ON pending (session_id, turn_id);
    CREATE TABLE ledger (
        id BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        model TEXT NOT NULL,
        input BIGINT NOT NULL,
        cached BIGINT NOT NULL,
        cache_write BIGINT NOT NULL,
        output BIGINT NOT NULL,
        cost_usd DOUBLE PRECISION NOT NULL,
        priced BOOLEAN NOT NULL,
        search_queries BIGINT NOT NULL,
        search_cost_usd DOUBLE PRECISION NOT NULL,
        time DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX ledger_by_session ON ledger (session_id, id);
    CREATE TABLE rules (
        id TEXT PRIMARY KEY,
        scope INTEGER NOT NULL,
        kind INTEGER NOT NULL,
        scope_label TEXT NOT NULL,
        session_id TEXT NOT NULL,
        workspace TEXT NOT NULL,
        caller TEXT NOT NULL,
        create_time DOUBLE PRECISION NOT NULL,
        request_id TEXT NOT NULL
    );
    CREATE INDEX rules_by_session ON rules (session_id);
    CREATE INDEX rules_by_workspace ON rules (caller, workspace);
    CREATE TABLE images (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        media_type TEXT NOT NULL,
        data BYTEA NOT NULL,
        create_time DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE histories (
        session_id TEXT PRIMARY KEY,
        history BYTEA NOT NULL
    );
    CREATE TABLE tokens (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        admin BOOLEAN NOT NULL,
        create_time DOUBLE PRECISION NOT NULL,
        revoke_time DOUBLE PRECISION
    );
    CREATE INDEX tokens_by_name ON tokens (name);
    """,
    """
    -- A session's history as each of its turns left it, so that a fork can start from
    -- any finished turn; and each file the agent changed, as it was before the session
    -- first changed it (GetDiff).
    CREATE TABLE turn_histories (
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        history BYTEA NOT NULL,
        PRIMARY KEY (session_id, turn_id)
    );
    CREATE TABLE file_originals (
        session_id TEXT NOT NULL,
        path TEXT NOT NULL,
        content BYTEA,
        PRIMARY KEY (session_id, path)
    );
    CREATE INDEX turns_by_time ON turns (session_id, create_time, turn_id);
    CREATE INDEX images_by_session ON images (session_id);
    CREATE INDEX ledger_by_turn ON ledger (session_id, turn_id);
    """,
    """
    -- Unknown is not zero: a call whose provider reported no token counts says so.
    ALTER TABLE ledger ADD COLUMN tokens_unknown BOOLEAN NOT NULL DEFAULT FALSE;
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
    INSERT INTO workspace_names (owner, name, folder)
        SELECT DISTINCT ON (owner, workspace) owner, workspace, workspace FROM sessions
        WHERE owner <> '' AND workspace <> id ORDER BY owner, workspace, create_time
    ON CONFLICT DO NOTHING;
    """,
    """
    -- Rules that match more than a label (a command's prefix, a path's glob), that deny,
    -- and that end.
    ALTER TABLE rules ADD COLUMN match_kind INTEGER NOT NULL DEFAULT 1;
    -- A session's mode (blitz.v1.SessionMode: 1 is ASK).
    ALTER TABLE sessions ADD COLUMN mode INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE rules ADD COLUMN pattern TEXT NOT NULL DEFAULT '';
    ALTER TABLE rules ADD COLUMN effect INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE rules ADD COLUMN expire_time DOUBLE PRECISION;
    """,
    """
    -- Turns queued behind their session's (BUSY_STRATEGY_ENQUEUE): each one's place.
    ALTER TABLE turns ADD COLUMN queued DOUBLE PRECISION;
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
        server_wide BOOLEAN NOT NULL,
        declared TEXT NOT NULL,
        secret TEXT NOT NULL,
        previous_secret TEXT NOT NULL,
        previous_until DOUBLE PRECISION,
        failures INTEGER NOT NULL,
        create_time DOUBLE PRECISION NOT NULL,
        update_time DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX webhooks_by_owner ON webhooks (owner, create_time);
    CREATE TABLE webhook_outbox (
        id BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        kind TEXT NOT NULL,
        time DOUBLE PRECISION NOT NULL
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
        body BYTEA NOT NULL,
        state TEXT NOT NULL,
        tries INTEGER NOT NULL,
        attempts TEXT NOT NULL,
        next_attempt DOUBLE PRECISION NOT NULL,
        deadline DOUBLE PRECISION NOT NULL,
        event_time DOUBLE PRECISION NOT NULL,
        create_time DOUBLE PRECISION NOT NULL,
        lease_owner TEXT NOT NULL DEFAULT '',
        lease_until DOUBLE PRECISION
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
        manifest BYTEA,
        create_time DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (session_id, turn_id, at)
    );
    CREATE TABLE checkpoint_blobs (
        session_id TEXT NOT NULL,
        hash TEXT NOT NULL,
        content BYTEA NOT NULL,
        PRIMARY KEY (session_id, hash)
    );
    """,
    """
    -- Workflow runs (blitz.core.workflows.workflow_runs): a run's state, its current step,
    -- attempt and finished steps' outputs as JSON, written with each of its flow_step events.
    CREATE TABLE workflow_runs (
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        state BYTEA NOT NULL,
        update_time DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (session_id, turn_id)
    );
    """,
    """
    -- The repository a session's workspace was cloned from (a serialized
    -- blitz.v1.Repository); NULL: a plain folder.
    ALTER TABLE sessions ADD COLUMN repository BYTEA;
    """,
    """
    -- The server's own keys, by name (`links`: what approval links are signed with,
    -- blitz.core.links), made by the first process that needs one and never sent anywhere.
    -- Deleting a row rotates its key at the next start.
    CREATE TABLE server_keys (
        name TEXT PRIMARY KEY,
        key BYTEA NOT NULL,
        create_time DOUBLE PRECISION NOT NULL
    );
    """,
    """
    -- Schedules (blitz.core.schedules): each one's spec (a serialized blitz.v1.Schedule of
    -- what its owner asked) and its next tick (NULL while paused); and a row per firing,
    -- keyed by its tick, so that a tick is fired once whichever process claims it.
    CREATE TABLE schedules (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        spec BYTEA NOT NULL,
        state INTEGER NOT NULL,
        next_fire DOUBLE PRECISION,
        anchor DOUBLE PRECISION NOT NULL,
        create_time DOUBLE PRECISION NOT NULL,
        update_time DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX schedules_by_owner ON schedules (owner, create_time, id);
    CREATE INDEX schedules_due ON schedules (next_fire) WHERE state = 1;
    CREATE TABLE schedule_firings (
        schedule_id TEXT NOT NULL,
        tick_time DOUBLE PRECISION NOT NULL,
        fire_time DOUBLE PRECISION NOT NULL,
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
        server_wide BOOLEAN NOT NULL,
        spec BYTEA NOT NULL,
        secret TEXT NOT NULL,
        create_time DOUBLE PRECISION NOT NULL,
        update_time DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX hooks_by_owner ON hooks (owner, create_time);
    """,
]
