"""Approval links and Slack's buttons: answering a request from a webhook's message.

`tokens.py` makes and checks the signed token of one answer to one request; `offers.py`
says which links a message of a request carries (made when the outbox is expanded,
`blitz.core.webhooks`); `deciding.py` serves the link pages and answers through Decide's
own path (`LinkCore`, the link port); `slack.py` takes Slack's interactivity requests
(`SlackActions`, the Slack port). docs/webhooks.md, "Approval links", says what a person
sees; docs/security.md what each refuses.
"""

from blitz.core.links.deciding import LinkCore, Resolver
from blitz.core.links.offers import LinkMaker, Offer
from blitz.core.links.slack import SlackActions
from blitz.core.links.tokens import KEY_NAME, LinkRefused, LinkSigner, LinkToken, new_key

__all__ = [
    "KEY_NAME",
    "LinkCore",
    "LinkMaker",
    "LinkRefused",
    "LinkSigner",
    "LinkToken",
    "Offer",
    "Resolver",
    "SlackActions",
    "new_key",
]
