"""The LLM proxy: OpenAI chat completions in, OpenAI or Anthropic upstream, streamed answers out."""
