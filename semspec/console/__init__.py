"""The web console: the board of tasks, a task's timeline, the inbox of escalations, the
monitor and the knowledge, served on loopback to the stack's owner (``semspec ui``, started by
``semspec up``). Docs: ``docs/console.md``; its floor: ADR 0003 (above ``semspec.client``).

The contract the page modules build on:

| module | holds |
|---|---|
| ``state`` | ``ConsoleState``: what every page reads, from ``request.app.state.console`` |
| ``app`` | ``create_app(state) -> Starlette``: the routes of every page module, the access rules |
| ``auth`` | the login, the session cookie, the Host/Origin checks (a middleware) |
| ``session`` | ``ConsoleSession``: one start's host name, secret and cookies (in the run folder) |
| ``forms`` | ``read_form(request)``: a POST handler's form, after the same-origin check |
| ``live`` | ``LiveFeed``: one NATS subscription set fanned out to every open page (SSE) |
| ``board_page``, ``monitor_page`` | ``/`` and ``/monitor`` |
| ``board_rows``, ``monitor_data`` | what the board and the monitor show, from Temporal and NATS |
| ``serve`` | ``semspec ui``'s server: uvicorn on a loopback socket |
| ``task_page``, ``inbox_page``, ``knowledge_page`` | ``/tasks/{id}``, ``/inbox``, ``/knowledge`` |
| ``page_status`` | the nav's open-escalation count and the no-monitor banner of every page |
| ``board_filter``, ``diff_files``, ``human_time`` | the board's filter, a patch per file, ages |

Each page module exports ``routes() -> list[BaseRoute]``; ``app`` mounts them all.

``ConsoleState`` fields: ``config`` (``SemspecConfig``), ``repo`` (``Path``), ``session`` (the
host name and secret of this start), ``templates`` (a Jinja2 ``Environment``, autoescaping
on, loading ``semspec/console/templates/``), ``feed`` (the ``LiveFeed``); methods
``await temporal()`` (one cached Temporal client), ``await nats()`` (one cached NATS
connection), ``graph()`` (opens the stack's graph store: blocking, call it through
``anyio.to_thread.run_sync``) and ``render(request, template, context)`` (an ``HTMLResponse``).

Routes: ``/`` board, ``/tasks/{task_id}`` task, ``/inbox`` inbox, ``/monitor`` monitor,
``/knowledge`` knowledge, ``/events`` the server-sent events of the live feed, ``/static/...``
the console's own CSS and JavaScript.

Templates extend ``base.html`` (``{% extends "base.html" %}``, blocks ``title`` and
``content``; the context's ``active`` names the nav entry to mark: ``board``, ``inbox``,
``monitor``, ``knowledge``). Forms POST to the page's own path; a handler reads the form with
``forms.read_form``; no action is taken on GET.

Access: every request, static files included, passes ``auth.ConsoleAccess`` first; a page never
checks the secret itself.
"""
