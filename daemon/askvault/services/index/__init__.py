"""Keeping the index: the notes' rows, chunks and links (indexer), a whole pass of
`askvault index` (index_pass), the vectors of the backlog (embedding) and what it gives way
to (foreground), the distance cut-off calibrated for the vectors (calibration), and the
guard that refuses a reconcile of a vault that is not there (deletion_guard)."""
