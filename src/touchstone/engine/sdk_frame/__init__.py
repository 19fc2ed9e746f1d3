"""The rows and ``metrics`` of ``evaluate()`` in the shape azure-ai-evaluation 1.18.10 gives them.

The SDK puts every evaluator's per-row outputs in a pandas DataFrame and returns
``to_dict("records")`` of it, so what a row holds depends on the other rows: a key that some rows of
an evaluator have is present in every row (NaN where a row lacks it, e.g. a row whose evaluator
raised), a column of ints with a gap becomes floats, ints mixed with floats become floats. Its
``metrics`` are the means of the numeric columns (booleans included, NaN skipped), with thresholds,
pass/fail labels and the token counts of its own metrics left out, plus a few rates it names itself.
This package reproduces those rules in plain Python, without pandas, in one place:

- :mod:`.values`: a cell's value, and a column's values coerced together;
- :mod:`.columns`: the frame of outputs held in memory, rows made whole (a small run);
- :mod:`.metrics`: the SDK's ``metrics`` from the frame's columns;
- :mod:`.gather`: the frame's columns gathered row by row without holding the rows (a large run,
  the output files), giving a :class:`~.gather.FrameSchema`;
- :mod:`.render`: one row rendered from that schema (rows read back from the store, rows appended
  to the files as they complete).
"""
