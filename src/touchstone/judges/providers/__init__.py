"""Judge providers: one module each, registered by name with one decorator
(:func:`~touchstone.judges.providers.registry.register_provider`). A provider's backend builds its
request bodies, sends them and classifies its errors into :mod:`touchstone.judges.errors`' tree;
``base`` holds the interface and what they share, ``registry`` the names (built in, entry points),
``openai_compat`` serves OpenAI, Azure OpenAI and OpenAI-compatible servers, ``anthropic`` Claude's
Messages API, ``dry_run`` answers every call of a dry run with a placeholder."""
