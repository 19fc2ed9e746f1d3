"""Agent messages in the SDK's format, shared by the agent snippets (data, not code under test)."""

QUERY = [
    {"role": "system", "content": "You are a friendly and helpful customer service agent."},
    {"createdAt": 1700000060, "role": "user", "content": [
        {"type": "text", "text": "Hi, I need help with the last 2 orders on my account #888. Could you update me on their status?"}]},
]
RESPONSE = [
    {"createdAt": 1700000070, "run_id": "0", "role": "assistant",
     "content": [{"type": "text", "text": "Hello! Let me quickly look up your account details."}]},
    {"createdAt": 1700000075, "run_id": "0", "role": "assistant", "content": [
        {"type": "tool_call", "tool_call_id": "tool_call_001", "name": "get_orders",
         "arguments": {"account_number": "888"}}]},
    {"createdAt": 1700000080, "run_id": "0", "tool_call_id": "tool_call_001", "role": "tool",
     "content": [{"type": "tool_result", "tool_result": '[{ "order_id": "123" }, { "order_id": "124" }]'}]},
    {"createdAt": 1700000105, "run_id": "0", "role": "assistant", "content": [
        {"type": "text", "text": "Order 123 has shipped and order 124 is delayed until March 20. [J5]"}]},
]
TOOL_DEFINITIONS = [
    {"name": "get_orders", "description": "Get the list of orders for a given account number.",
     "parameters": {"type": "object", "properties": {"account_number": {"type": "string"}}}},
    {"name": "get_order", "description": "Get the details of a specific order.",
     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}},
]
