def parse_sequence_example(*a, **k):
    raise NotImplementedError
