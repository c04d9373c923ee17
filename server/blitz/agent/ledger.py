"""One model response to one usage-ledger entry: tokens, searches, and cost from genai-prices.

Unknown is not zero: a model with no known price is recorded with `priced=False`, and one
known to be free (`demo`) with `priced=True` and cost 0; a response that reports no token
counts at all (pydantic-ai then holds zeros) with `tokens_unknown=True`. Never raises for a
missing price.
"""

from __future__ import annotations

from decimal import Decimal

from pydantic_ai.messages import ModelResponse

from blitz.ports.agent import ModelCallUsage

__all__ = ["usage_entry"]


def usage_entry(model: str, response: ModelResponse, *, free: bool) -> ModelCallUsage:
    """The ledger entry for `response`, made by the session's model `model`."""
    usage = response.usage
    # Searches the provider ran for the model (Anthropic's and OpenAI's web search, Gemini's
    # grounding), as pydantic-ai and genai-prices read them from the response's usage.
    searches = int(getattr(usage, "web_searches", 0) or 0)
    cost, search_cost, priced = 0.0, 0.0, True
    if not free:
        try:
            price = response.cost()
        except (LookupError, ValueError, AssertionError):
            # No price for this model or provider, or the provider omitted its usage.
            priced = False
        else:
            cost = float(price.total_price)
            per_thousand = price.model_price.web_searches_kcount
            if searches and isinstance(per_thousand, Decimal):  # not tiered
                search_cost = float(per_thousand) * searches / 1000
    return ModelCallUsage(
        model=model,
        input=usage.input_tokens,
        cached=usage.cache_read_tokens,
        cache_write=usage.cache_write_tokens,
        output=usage.output_tokens,
        cost_usd=cost,
        priced=priced,
        search_queries=searches,
        search_cost_usd=search_cost,
        tokens_unknown=not usage.has_values(),
    )
