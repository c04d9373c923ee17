"""What the model is sent for a turn: the prompt, with attached context as plain text, the
accepted plan or a rejected one's feedback before it, and the turn's images; and the title
an untitled session takes from its first prompt."""

from __future__ import annotations

from blitz.core.requests.plans import read_plan
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.html_text import html_to_text
from blitz.ports import ImageInput
from blitz.redact import mask_known, redact_text
from blitz.store import Store
from blitz.v1.turn_pb2 import Turn

__all__ = ["TITLE_CHARS", "model_prompt", "title_of", "turn_images", "turn_prompt"]


def model_prompt(turn: Turn) -> str:
    """`prompt` if set, else `text`, followed by each context block reduced to text."""
    parts = [turn.prompt or turn.text]
    for block in turn.context:
        body = block.text or html_to_text(block.html)
        head = " ".join(x for x in (block.kind or "context", block.title, block.url) if x)
        parts.append(f"[{head}]\n{body}")
    return "\n\n".join(p for p in parts if p)


def turn_prompt(stored_plan: bytes | None, turn: Turn) -> str:
    """The model's prompt: the turn's, after the accepted plan, or after the feedback on
    the rejected one (`stored_plan`: the session's). NO_PENDING_PLAN for an accepting turn
    with no open proposal."""
    prompt = model_prompt(turn)
    plan = read_plan(stored_plan)
    if not turn.accepted:
        if plan is not None and plan.rejected:
            return plan.rejected_prompt() + (f"\n\n{prompt}" if prompt else "")
        return prompt
    if plan is None or not plan.open:
        raise BlitzError(
            Reason.NO_PENDING_PLAN,
            "there is no proposed plan to accept",
            {"field": "turn.accepted"},
        )
    return plan.accepted_prompt() + (f"\n\n{prompt}" if prompt else "")


async def turn_images(store: Store, session_id: str, turn: Turn) -> tuple[ImageInput, ...]:
    """The images the turn attaches, uploaded to its session before."""
    images = []
    for image_id in turn.image_ids:
        image = await store.get_image(session_id, image_id)
        if image is None:
            raise invalid_argument(
                "turn.image_ids", f"no image {image_id!r} in this session", image_id=image_id
            )
        images.append(ImageInput(data=image.data, media_type=image.media_type))
    return tuple(images)


# How much of its first prompt's first line an untitled session is titled with.
TITLE_CHARS = 80


def title_of(turn: Turn) -> str:
    """The title an untitled session takes from its first turn: the prompt's first line,
    masked as events are (a title shows in lists, deliveries and logs); "" for a server
    command, an aside or an empty prompt."""
    if turn.command or turn.aside:
        return ""
    text = mask_known(redact_text(turn.text))
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"
