# mypy: ignore-errors
"""A judge evaluator built from OpenAIModelConfiguration(...) and then used."""
import os

from azure.ai.evaluation import OpenAIModelConfiguration, RelevanceEvaluator

from _emit import emit

model_config = OpenAIModelConfiguration(type="openai", model="gpt-4o", base_url=os.environ["COMPAT_BASE_URL"],
                                        api_key=os.environ["COMPAT_API_KEY"])
relevance = RelevanceEvaluator(model_config)
emit(relevance(query="What time is it in UTC?", response="I cannot see a clock. [J2]"))
