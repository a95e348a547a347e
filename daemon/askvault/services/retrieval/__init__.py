"""Finding the evidence for a question: the fused search (search), narrowed to a period
(periods), the evidence pack (context) and its neighbours and source windows
(context_graph), and the notes one answer reads, each once (note_reads)."""
