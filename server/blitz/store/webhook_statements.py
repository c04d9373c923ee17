"""The SQL of webhooks both engines run alike: subscriptions, the outbox, deliveries.

Written as `statements.py` writes the rest (SQLite's text, `?` for a parameter, each
engine's fragments from its `Dialect`); apart from it because it is one idea of its own,
the part of the store that only the webhook dispatcher (core/webhooks) reads and writes.
"""

from __future__ import annotations

from blitz.store.records import DeliveryPage
from blitz.store.statements import FLAGS, Dialect, marks
from blitz.store.webhook_records import DECLARED
from blitz.v1 import webhooks_pb2 as wh

__all__ = ["DELIVERY_COLUMNS", "WEBHOOK_COLUMNS", "WebhookStatements"]

WEBHOOK_COLUMNS = (
    "id, owner, url, events, labels, session_id, description, format, state, state_reason,"
    " server_wide, declared, secret, previous_secret, previous_until, failures, create_time,"
    " update_time"
)
DELIVERY_COLUMNS = (
    "id, webhook_id, message_id, kind, session_id, turn_id, seq, body, state, tries, attempts,"
    " next_attempt, deadline, event_time, create_time, lease_owner, lease_until"
)


class WebhookStatements:
    """Every webhook statement, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql
        webhooks = f"SELECT {WEBHOOK_COLUMNS} FROM webhooks"
        deliveries = f"SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries"
        self.add_webhook = sql(f"INSERT INTO webhooks ({WEBHOOK_COLUMNS}) VALUES ({marks(18)})")
        self.get_webhook = sql(f"{webhooks} WHERE id = ?")
        self.lock_webhook = sql(f"{webhooks} WHERE id = ?{dialect.lock}")
        self._webhook_lists = {
            by_owner: sql(
                webhooks + (" WHERE owner = ?" if by_owner else "") + " ORDER BY create_time, id"
            )
            for by_owner in FLAGS
        }
        # Parameters: every column but id, owner, server_wide, declared and create_time,
        # in order, then the id.
        self.update_webhook = sql(
            "UPDATE webhooks SET url = ?, events = ?, labels = ?, session_id = ?,"
            " description = ?, format = ?, state = ?, state_reason = ?, secret = ?,"
            " previous_secret = ?, previous_until = ?, failures = ?, update_time = ?"
            " WHERE id = ?"
        )
        self.webhook_health = sql(
            "UPDATE webhooks SET failures = ?, state = ?, state_reason = ?, update_time = ?"
            " WHERE id = ?"
        )
        self.delete_webhook = (
            sql("DELETE FROM webhook_deliveries WHERE webhook_id = ?"),
            sql("DELETE FROM webhooks WHERE id = ?"),
        )
        self.declared_webhooks = sql("SELECT id FROM webhooks WHERE declared <> ''")
        # A declared webhook as the configuration has it now; its state, failures and
        # deliveries are the store's.
        self.declare_webhook = sql(
            f"INSERT INTO webhooks ({WEBHOOK_COLUMNS}) VALUES ({marks(18)})"
            " ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, url = excluded.url,"
            " events = excluded.events, labels = excluded.labels,"
            " session_id = excluded.session_id, description = excluded.description,"
            " format = excluded.format, server_wide = excluded.server_wide,"
            " declared = excluded.declared, secret = excluded.secret,"
            " update_time = excluded.update_time"
        )

        # The outbox: a row per stored event a webhook may be told of (append_events)
        self.add_outbox = sql(
            "INSERT INTO webhook_outbox (session_id, seq, kind, time) VALUES (?, ?, ?, ?)"
        )
        self.take_outbox = sql(
            "SELECT o.id, o.session_id, o.seq, o.kind, o.time, e.data, x.owner, x.labels, x.title"
            " FROM webhook_outbox o"
            " LEFT JOIN events e ON e.session_id = o.session_id AND e.seq = o.seq"
            " LEFT JOIN sessions x ON x.id = o.session_id"
            f" ORDER BY o.id LIMIT ?{dialect.lock_skipping.format(alias='o')}"
        )
        self.drop_outbox = sql("DELETE FROM webhook_outbox WHERE id = ?")
        # While no webhook exists: the rows stamped before a time (a parameter).
        self.drop_old_outbox = sql("DELETE FROM webhook_outbox WHERE time < ?")
        self.webhooks_exist = sql("SELECT 1 FROM webhooks LIMIT 1")
        self.outbox_stats = sql(
            "SELECT (SELECT COUNT(*) FROM webhook_outbox), (SELECT MIN(time) FROM webhook_outbox),"
            " (SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending'),"
            " (SELECT MIN(event_time) FROM webhook_deliveries WHERE state = 'pending')"
        )

        # Deliveries
        self.add_delivery = sql(
            f"INSERT INTO webhook_deliveries ({DELIVERY_COLUMNS}) VALUES ({marks(17)})"
        )
        self.get_delivery = sql(f"{deliveries} WHERE id = ?")
        self._delivery_pages = {
            before: sql(
                f"{deliveries} WHERE webhook_id = ?"
                + (" AND (create_time < ? OR (create_time = ? AND id < ?))" if before else "")
                + " ORDER BY create_time DESC, id DESC LIMIT ?"
            )
            for before in FLAGS
        }
        # Parameters: owner, lease_until, now, now, the webhooks to skip (JSON), the
        # principals to skip (JSON), how many candidates, how many of one principal at
        # most, the principals to put last in each turn (JSON), limit; `principal` is
        # returned after the delivery's columns. A delivery goes only after every earlier
        # one of its (webhook, session): none pending before it, and none of its session's
        # earlier events still in the outbox. Of the first due (the candidates, locked on
        # PostgreSQL), the claim takes round-robin across principals: each one's first,
        # then each one's second, and so on.
        principal = f"CASE WHEN w.declared <> '' THEN '{DECLARED}' ELSE w.owner END"
        self.claim_deliveries = sql(
            "UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ? WHERE id IN ("
            " SELECT r.id FROM (SELECT c.id, c.next_attempt, c.seq, c.principal,"
            "  ROW_NUMBER() OVER (PARTITION BY c.principal ORDER BY c.next_attempt, c.seq)"
            "  AS turn FROM ("
            f"  SELECT d.id, d.next_attempt, d.seq, {principal} AS principal"
            "  FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id"
            "  WHERE d.state = 'pending' AND d.next_attempt <= ?"
            "  AND (d.lease_until IS NULL OR d.lease_until < ?)"
            f"  AND w.state = {wh.WEBHOOK_STATE_ACTIVE}"
            f"  AND d.webhook_id NOT IN {dialect.json_texts}"
            f"  AND {principal} NOT IN {dialect.json_texts}"
            "  AND (d.session_id = '' OR ("
            "   NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.webhook_id = d.webhook_id"
            "    AND e.session_id = d.session_id AND e.state = 'pending' AND e.seq < d.seq)"
            "   AND NOT EXISTS (SELECT 1 FROM webhook_outbox o"
            "    WHERE o.session_id = d.session_id AND o.seq < d.seq)))"
            "  ORDER BY d.next_attempt, d.seq"
            f"  LIMIT ?{dialect.lock_skipping.format(alias='d')}) c) r"
            " WHERE r.turn <= ?"
            f" ORDER BY r.turn, CASE WHEN r.principal IN {dialect.json_texts} THEN 1 ELSE 0 END,"
            " r.next_attempt, r.seq LIMIT ?)"
            f" RETURNING {DELIVERY_COLUMNS}, (SELECT {principal} FROM webhooks w"
            " WHERE w.id = webhook_deliveries.webhook_id)"
        )
        self.release_deliveries = sql(
            "UPDATE webhook_deliveries SET lease_owner = '', lease_until = NULL"
            f" WHERE lease_owner = ? AND id IN {dialect.json_texts}"
        )
        self.webhook_recovered = sql(
            "UPDATE webhooks SET failures = 0 WHERE id = ? AND failures <> 0"
        )
        self.release_all_deliveries = sql(
            "UPDATE webhook_deliveries SET lease_owner = '', lease_until = NULL"
            " WHERE lease_owner <> ''"
        )
        # Parameters: state, tries, attempts, next_attempt, id, the lease's owner.
        self.finish_attempt = sql(
            "UPDATE webhook_deliveries SET state = ?, tries = ?, attempts = ?, next_attempt = ?,"
            " lease_owner = '', lease_until = NULL WHERE id = ? AND lease_owner = ?"
        )
        self.redeliver = sql(
            "UPDATE webhook_deliveries SET state = 'pending', next_attempt = ?, deadline = ?"
            " WHERE id = ?"
        )
        self.expire_deliveries = sql(
            "UPDATE webhook_deliveries SET state = 'failed'"
            " WHERE state = 'pending' AND deadline < ? AND (lease_until IS NULL OR lease_until < ?)"
        )
        self.prune_deliveries = sql(
            "DELETE FROM webhook_deliveries WHERE state <> 'pending' AND create_time < ?"
        )
        self.pending_sessions = sql(
            "SELECT DISTINCT session_id FROM webhook_deliveries"
            " WHERE webhook_id = ? AND state = 'pending' AND session_id <> '' LIMIT ?"
        )

    def list_webhooks(self, owner: str | None) -> tuple[str, list[object]]:
        return self._webhook_lists[owner is not None], [] if owner is None else [owner]

    def list_deliveries(self, page: DeliveryPage) -> tuple[str, list[object]]:
        args: list[object] = [page.webhook_id]
        if page.before is not None:
            when, last_id = page.before
            args += [when, when, last_id]
        args.append(page.limit)
        return self._delivery_pages[page.before is not None], args
