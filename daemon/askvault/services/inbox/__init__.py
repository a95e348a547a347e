"""The question inbox (DESIGN §2): question notes in, answer notes out, one at a time.

`inbox.Inbox` holds its parts by name: `files` (answer notes, archive, log, the
`askvault ask --save` writer too), `presence`, `schedule`, `stale`, `upkeep`, `listing`
and `questions` (one question's steps). The daemon's inbox thread (app/inbox_loop.py)
only waits and wakes between its steps.
"""
