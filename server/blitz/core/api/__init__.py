"""What the calls of SessionService and WorkspaceService do, transport-free.

`service.py` implements the session port, with the calls of `sessions.py` (the sessions'
lifecycle), `decisions.py` (Decide, Answer, the rules), `rewind.py` (RewindSession) and
`server_info.py`; `workspace_service.py` implements the workspace port; `validation.py`
checks what clients send, `views.py` and `pages.py` shape what they get back.

Nothing is re-exported here: importing one part never imports the others.
"""
