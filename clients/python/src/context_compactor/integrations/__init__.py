"""Drop-ins for agent frameworks, each behind its own extra of the distribution.

- `context_compactor.integrations.langchain` (`[langchain]`): a LangChain v1 agent
  middleware that compacts the agent's messages before each model call.
- `context_compactor.integrations.pydantic_ai` (`[pydantic-ai]`): a pydantic-ai history
  processor.
- `context_compactor.integrations.openai_agents` (`[openai-agents]`): an OpenAI Agents SDK
  `Session` backed by the service's session store.

Importing this package imports no framework; each module imports only its own.
"""
