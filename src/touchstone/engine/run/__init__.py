"""A run of ``evaluate()`` once its call is checked: the session its passes share
(:mod:`.session`), resuming (:mod:`.resume`), the input rows and target (:mod:`.target_pass`), the
CPU-bound and I/O-bound scoring passes (:mod:`.cpu_pass`, :mod:`.judge_pass`), the store writes and
their events (:mod:`.sink`), the corpus figures (:mod:`.corpus`) and the result (:mod:`.finish`)."""
