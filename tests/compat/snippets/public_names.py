# mypy: ignore-errors
"""The SDK's typed-dict names: Conversation, Message, EvaluatorConfig, AzureAIProject, RougeType."""
from azure.ai.evaluation import AzureAIProject, Conversation, EvaluatorConfig, Message, RougeType

from _emit import emit

message = Message(role="user", content="hello")
conversation = Conversation(messages=[message, Message(role="assistant", content="hi", context="greeting")])
config = EvaluatorConfig(column_mapping={"response": "${data.answer}"})
project = AzureAIProject(subscription_id="sub", resource_group_name="rg", project_name="proj")
emit({
    "message": message,
    "conversation": conversation,
    "config": config,
    "project": project,
    "all_dicts": all(isinstance(x, dict) for x in (message, conversation, config, project)),
    "rouge_types": [t.value for t in RougeType],
    "rouge_l": RougeType.ROUGE_L.value,
})
