"""Fixtures for provider tests: agents pointed at the scripted provider (`fake`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from support.fake_provider import KEY, FakeProvider

from blitz.agent import Agent, ModelAccess, RetryPolicy


@pytest.fixture
async def make_agent(fake: FakeProvider) -> AsyncIterator[Callable[..., Agent]]:
    """An Agent whose every provider is the fake; retries fast; closed after the test."""
    made: list[Agent] = []

    def make(**access: Any) -> Agent:
        fields: dict[str, Any] = {
            "openai_api_key": KEY,
            "openai_base_url": fake.url + "/v1",
            "anthropic_api_key": KEY,
            "anthropic_base_url": fake.url,
            "compatible_base_url": fake.url + "/v1",
            **access,
        }
        agent = Agent(
            command_timeout=10,
            output_cap=4096,
            access=ModelAccess(**fields),
            retry=RetryPolicy(retries=2, first_delay=0.01),
        )
        made.append(agent)
        return agent

    yield make
    for agent in made:
        await agent.aclose()
