"""Evaluators: a metric turns one row into Scores. One module (or package) per family, all reachable
through the registry (:mod:`.registry`), which finds them by walking this package on first use:

* :mod:`.base`: the :class:`~.base.Evaluator` base, :class:`~.base.MetricInfo`, input specs;
* :mod:`.text`: reference-overlap metrics (SQuAD F1 / exact match, BLEU, chrF, GLEU, METEOR, ROUGE),
  tokenizers apart; :mod:`.ranking`, :mod:`.semantic`, :mod:`.bertscore`, :mod:`.perplexity`,
  :mod:`.signals`: the other metrics computed locally;
* :mod:`.judge`: the judge primitive, prompts, scales and reply reading, the judged-metric base, conversations
  and :class:`~.judge.prompt_metric.PromptMetric` (a prompt-only judged metric as a value);
  :mod:`.prompt_metrics`: the built-in prompt-only metrics as a table of such values;
* :mod:`.quality`, :mod:`.retrieval_judge`, :mod:`.groundedness_pro`, :mod:`.rag`, :mod:`.safety`,
  :mod:`.agent`: judged metrics with logic beyond one prompt; :mod:`.custom`: rubric and function
  metrics defined by users.
"""
