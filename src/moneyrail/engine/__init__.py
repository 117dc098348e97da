"""Operations, the outbox and its relay, retries, dead letters: the only package that knows dramatiq."""
