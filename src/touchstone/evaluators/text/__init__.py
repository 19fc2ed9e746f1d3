"""Text metrics against reference answers, one module per metric family (as sacrebleu keeps them),
the tokenizers apart:

* :mod:`.squad`: SQuAD's token F1 and exact match;
* :mod:`.bleu`, :mod:`.chrf`: BLEU (nltk or sacrebleu) and chrF, with corpus scores from summed
  segment statistics (shared in :mod:`.base`);
* :mod:`.gleu`, :mod:`.meteor`: nltk's GLEU and METEOR on word tokens (:mod:`.tokenize`);
* :mod:`.rouge`: rouge-score's ROUGE-N, ROUGE-L and ROUGE-Lsum.

Each metric is computed by the library that defines it, called below its convenience wrappers so
that per-row overhead stays small. Nothing here downloads data. Edge cases are defined and none
raise: a text with no token scores the metric's own value for empty input (0 for all of them);
several ground truths are scored as each library scores them (multi-reference BLEU and chrF,
nltk's best-ratio GLEU, METEOR's maximum, ROUGE's reference with the best F1).
"""

from touchstone.evaluators.text.bleu import BleuScoreEvaluator
from touchstone.evaluators.text.chrf import ChrfScoreEvaluator
from touchstone.evaluators.text.gleu import GleuScoreEvaluator
from touchstone.evaluators.text.meteor import MeteorScoreEvaluator, wordnet_installed
from touchstone.evaluators.text.rouge import RougeScoreEvaluator, RougeType
from touchstone.evaluators.text.squad import ExactMatchEvaluator, F1ScoreEvaluator, normalize_answer
from touchstone.evaluators.text.tokenize import SdkTokenizer, WordTokenizer

__all__ = [
    "BleuScoreEvaluator",
    "ChrfScoreEvaluator",
    "ExactMatchEvaluator",
    "F1ScoreEvaluator",
    "GleuScoreEvaluator",
    "MeteorScoreEvaluator",
    "RougeScoreEvaluator",
    "RougeType",
    "SdkTokenizer",
    "WordTokenizer",
    "normalize_answer",
    "wordnet_installed",
]
