"""Where interactions come from: a tailed directory of JSONL files, OTLP traces, touchstone's endpoint."""
