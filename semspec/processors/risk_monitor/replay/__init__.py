"""``semspec monitor replay``: recorded agent runs fed through the risk rules, offline.

``files`` reads a recorded file safely (a regular file, bounded size) into runs of monitor
events: semspec's own ``step`` events (JSONL, ``semspec_events``) or an OpenAI-style chat log
(``chat_log``). ``backtest`` feeds a run through ``rules.apply_event``, the function the live
monitor runs, and reports where each rule fired and what stopping at the first pause or halt
would have saved. No NATS, no Temporal.
"""
