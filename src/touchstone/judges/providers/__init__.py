"""Judge providers: one backend per provider builds its request bodies, sends them and classifies
its errors into :mod:`touchstone.judges.errors`' tree. ``base`` holds the interface and what they
share, ``registry`` picks the backend for a configuration, ``openai_compat`` serves OpenAI, Azure
OpenAI and OpenAI-compatible servers, ``anthropic`` Claude's Messages API."""
