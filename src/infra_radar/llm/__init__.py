"""Model prose: the transport and client of an OpenAI-compatible server, the versioned prompts, grounding of
every reply against its item, the stage that asks and caches, and the rendering that lays prose over the rules'
text. Nothing outside this package talks to a model."""
