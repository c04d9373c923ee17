"""Any ACP agent behind a session: Blitz as the Agent Client Protocol's client.

An operator declares agents (`[agents.NAME]`, blitz.config.agents); a session created
with `agent = NAME` has its turns carried out by `AcpRunner` (runner.py) on the runner
seam: one agent process per live session (`AgentProcesses`, processes.py; `AgentProcess`,
process.py), spoken to over its stdio through Blitz's bounded transport (transport.py),
what it says mapped to the contract's events by the tables of docs/agents.md
(mapping.py, approvals.py), what it asks (client.py) decided or parked as Blitz's
approvals (decisions.py), its file access and terminals Blitz's own (terminals.py). The
core knows none of this: the assembly puts the runner before the built-in agent's.

Nothing is imported here, so that `claims.py` loads without the ACP SDK: a server that
declares no agent serves ACP sessions' turns with `claims.NoAgentsDeclared`, and never
imports the SDK, whose schema alone takes about a third of a second.
"""
