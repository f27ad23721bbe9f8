"""torch_geometric.data.HeteroData: typed node and edge stores, as the HGT tests use them."""


class _Store:
    """Attributes of one node or edge type (x, edge_index, ...)."""


class HeteroData:
    """data['paper'].x = ...; data['author', 'writes', 'paper'].edge_index = ...
    (a pair (src, dst) is the edge type (src, 'to', dst), or the one edge
    type already stored between them); metadata(), x_dict and
    edge_index_dict in the order the types were first used."""

    def __init__(self):
        self._nodes = {}
        self._edges = {}

    def _edge_key(self, key):
        if len(key) == 3:
            return tuple(key)
        src, dst = key
        known = [k for k in self._edges if k[0] == src and k[2] == dst]
        return known[0] if len(known) == 1 else (src, "to", dst)

    def __getitem__(self, key):
        if isinstance(key, str):
            return self._nodes.setdefault(key, _Store())
        return self._edges.setdefault(self._edge_key(key), _Store())

    def metadata(self):
        return list(self._nodes), list(self._edges)

    def _collect(self, stores, attr):
        return {k: getattr(s, attr) for k, s in stores.items() if hasattr(s, attr)}

    @property
    def x_dict(self):
        return self._collect(self._nodes, "x")

    @property
    def edge_index_dict(self):
        return self._collect(self._edges, "edge_index")
