"""The culling structures of level-set templates: a sphere tree over each template's surface nodes and
the box of its grid's interior, built once per template in the template's body frame.

Why. The node pass of a candidate grain pair (contact.levelset_contact.collect_nodes_in) asks of
every node of grain o whether it lies inside grain p. Candidate pairs come from bounding spheres,
so most of o's nodes are nowhere near p, and of those that are near, most are outside p's
interior. Before a node reaches the trilinear lookup of p's grid it must lie in p's bounding sphere
and in p's interior box; the tree lets a whole group of nodes fail these two tests at once.

Sphere tree. The nodes are split recursively at the median of the axis of largest extent (a k-d
split) down to at most LEAF nodes per leaf. Each tree row holds the sphere about its nodes' centroid
that contains them, its radius enlarged by SPHERE_MARGIN times the template's largest node radius so
that rounding never leaves a node outside. Rows are in depth-first preorder, each with a skip index:
the row after its subtree. A walk is one loop that either enters a row (goes on to the next row) or
skips its subtree (jumps to the skip index): no stack. A leaf holds its nodes as a range of
`tree_node` (template-local node indices in tree order); an inner row holds an empty range.

Interior box. Inside the grid, the trilinear interpolant is negative only in a cell with a negative
corner; so, along each axis, a point where it is negative lies between one cell below the lowest
index of a negative grid value and one cell above the highest. The box (lo, hi) in the body frame is
padded by BOX_MARGIN grid spacings against rounding; it is empty (lo > hi) when no grid value is
negative.

Both tests are conservative: a node they reject is one the exact tests of the node pass (within
p's bounding sphere, inside p's grid, phi_p < 0) reject too. Culling changes which nodes are tried,
never which are found.

Arrays for T templates (culling_arrays), over the concatenated node arrays t_nodes / t_node_off:
    tree_off (T + 1,): template t's rows are tree_off[t] .. tree_off[t + 1] - 1;
    tree (R, 4): row centre (body frame) and radius;
    link (R, 3): skip row (absolute), and the row's range [first, last) of tree_node (absolute; the
        block of template t is t_node_off[t] .. t_node_off[t + 1] - 1);
    tree_node (N,): the template-local index of each node in tree order;
    box (T, 6): lo (3), hi (3) of the interior box in the body frame.
"""

import numpy as np

LEAF = 16
SPHERE_MARGIN = 1e-9
BOX_MARGIN = 1e-6


def node_tree(nodes, leaf=LEAF):
    """(tree (R, 4), link (R, 3), order (n,)) of one template's nodes (n, 3): the sphere tree of the
    module docstring, with skip and leaf ranges relative to the template (row 0, order index 0)."""
    nodes = np.asarray(nodes, dtype=np.float64)
    if nodes.ndim != 2 or nodes.shape[1] != 3 or len(nodes) == 0:
        raise ValueError(f"nodes must be a non-empty (n, 3) array, got shape {nodes.shape}")
    if int(leaf) != leaf or leaf < 1:
        raise ValueError(f"leaf must be an integer >= 1, got {leaf!r}")
    margin = SPHERE_MARGIN * max(float(np.linalg.norm(nodes, axis=1).max()), 1e-300)
    rows, links, order = [], [], []

    def enter(idx):
        pts = nodes[idx]
        centre = pts.mean(axis=0)
        radius = float(np.sqrt(((pts - centre) ** 2).sum(axis=1).max()))
        rows.append((*centre, radius + margin))
        links.append([0, len(order), len(order)])
        return len(rows) - 1

    def build(idx):
        row = enter(idx)
        if len(idx) <= leaf:
            order.extend(idx.tolist())
            links[row][2] = len(order)
        else:
            pts = nodes[idx]
            axis = int(np.argmax(pts.max(axis=0) - pts.min(axis=0)))
            ranked = idx[np.argsort(pts[:, axis], kind="stable")]
            half = len(idx) // 2
            build(ranked[:half])
            build(ranked[half:])
        links[row][0] = len(rows)

    build(np.arange(len(nodes)))
    return np.array(rows, dtype=np.float64), np.array(links, dtype=np.int64), np.array(order, dtype=np.int64)


def interior_box(phi_grid, origin, spacing):
    """(6,) lo, hi in the body frame of the box that holds every point of the grid where its trilinear
    interpolant is negative (module docstring); lo > hi when no grid value is negative."""
    phi = np.asarray(phi_grid)
    if phi.ndim != 3:
        raise ValueError(f"phi_grid must be a 3-D array, got shape {phi.shape}")
    box = np.array([np.inf] * 3 + [-np.inf] * 3)
    negative = phi < 0.0
    if not negative.any():
        return box
    pad = BOX_MARGIN * spacing
    for d in range(3):
        rows = np.flatnonzero(negative.any(axis=tuple(k for k in range(3) if k != d)))
        box[d] = origin[d] + spacing * (rows[0] - 1) - pad
        box[3 + d] = origin[d] + spacing * (rows[-1] + 1) + pad
    return box


def culling_arrays(t_phi, t_phi_off, t_shape, t_origin, t_h, t_nodes, t_node_off, leaf=LEAF):
    """(tree_off, tree, link, tree_node, box) of the templates held in the concatenated template
    arrays of bodies.levelset (module docstring)."""
    trees, links, orders, boxes = [], [], [], []
    tree_off = [0]
    for t in range(len(t_node_off) - 1):
        a, b = int(t_node_off[t]), int(t_node_off[t + 1])
        tree, link, order = node_tree(t_nodes[a:b], leaf)
        link = link.copy()
        link[:, 0] += tree_off[-1]
        link[:, 1:] += a
        trees.append(tree)
        links.append(link)
        orders.append(order)
        tree_off.append(tree_off[-1] + len(tree))
        n = int(np.prod(t_shape[t]))
        phi = t_phi[t_phi_off[t]:t_phi_off[t] + n].reshape(tuple(int(v) for v in t_shape[t]))
        boxes.append(interior_box(phi, t_origin[t], float(t_h[t])))
    return (np.array(tree_off, dtype=np.int64), np.ascontiguousarray(np.concatenate(trees)),
            np.ascontiguousarray(np.concatenate(links)), np.concatenate(orders).astype(np.int64),
            np.ascontiguousarray(np.array(boxes, dtype=np.float64)))
