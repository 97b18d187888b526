//! Building the tries the runtime walks, and writing them out.
//!
//! One pool holds every node of every field matcher of a program. A forward
//! node stands for a literal the value starts with (or equals); its payloads
//! are the rules whose literal is exactly that. Its `sub` is the root of a
//! reverse trie, over the value's last bytes, for the patterns with a `*`
//! whose literal before the first `*` is that forward path; a reverse node's
//! payloads are the rules whose literal after the last `*` is its path, with
//! the middle pieces they must verify.

use super::Writer;
use crate::runtime::program::{NODE_WORDS, NONE};

#[derive(Default)]
struct Node {
    edges: Vec<(u8, usize)>,
    pay: Vec<(u32, Vec<Vec<u8>>)>,
    sub: Option<usize>,
}

/// The node pool.
#[derive(Default)]
pub(crate) struct Trie {
    nodes: Vec<Node>,
}

impl Trie {
    /// A new, unattached node.
    pub fn node(&mut self) -> usize {
        self.nodes.push(Node::default());
        self.nodes.len() - 1
    }

    fn child(&mut self, n: usize, b: u8) -> usize {
        let found = self
            .nodes
            .get(n)
            .map(|node| node.edges.binary_search_by_key(&b, |e| e.0));
        match found {
            Some(Ok(i)) => self
                .nodes
                .get(n)
                .and_then(|node| node.edges.get(i))
                .map_or(n, |e| e.1),
            Some(Err(i)) => {
                let c = self.node();
                if let Some(node) = self.nodes.get_mut(n) {
                    node.edges.insert(i, (b, c));
                }
                c
            }
            None => n,
        }
    }

    /// The node reached from `n` by `key`, created as needed.
    pub fn forward(&mut self, n: usize, key: &[u8]) -> usize {
        key.iter().fold(n, |n, &b| self.child(n, b))
    }

    /// The node reached from `n` by `key` read backwards.
    pub fn reverse(&mut self, n: usize, key: &[u8]) -> usize {
        key.iter().rev().fold(n, |n, &b| self.child(n, b))
    }

    /// The reverse trie hanging off forward node `n`.
    pub fn sub(&mut self, n: usize) -> usize {
        if let Some(s) = self.nodes.get(n).and_then(|node| node.sub) {
            return s;
        }
        let s = self.node();
        if let Some(node) = self.nodes.get_mut(n) {
            node.sub = Some(s);
        }
        s
    }

    /// Adds payload `id` to node `n`, with the middle pieces to verify.
    pub fn pay(&mut self, n: usize, id: u32, mids: Vec<Vec<u8>>) {
        if let Some(node) = self.nodes.get_mut(n) {
            node.pay.push((id, mids));
        }
    }

    /// Whether node `n` is a link in a chain: one edge, no payload, no reverse
    /// trie. Such nodes are not written; the bytes of their edges become the
    /// tail of the node the chain ends at.
    fn links(&self, n: usize) -> bool {
        self.nodes
            .get(n)
            .is_some_and(|node| node.edges.len() == 1 && node.pay.is_empty() && node.sub.is_none())
    }

    /// Follows the chain that starts at `n`: the node it ends at and the bytes
    /// consumed on the way, after the edge that led to `n`.
    fn chain(&self, mut n: usize) -> (usize, Vec<u8>) {
        let mut tail = Vec::new();
        while self.links(n) {
            match self.nodes.get(n).and_then(|node| node.edges.first()) {
                Some(&(b, c)) => {
                    tail.push(b);
                    n = c;
                }
                None => break,
            }
        }
        (n, tail)
    }

    /// Writes every node, edge, payload and verification record; returns the
    /// word offset of a root node given its index. Chains of nodes with one
    /// edge and nothing else are written as one node with a tail.
    pub fn write(mut self, w: &mut Writer) -> impl Fn(usize) -> u32 {
        for node in &mut self.nodes {
            node.pay.sort_by_key(|p| p.0);
            node.pay.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        }
        // Which nodes are written, and the tail of each: roots (reached by no
        // edge) and the ends of chains.
        let n = self.nodes.len();
        let mut reached = vec![false; n];
        for node in &self.nodes {
            for &(_, c) in &node.edges {
                if let Some(r) = reached.get_mut(c) {
                    *r = true;
                }
            }
        }
        // From every root, follow each edge to the end of its chain; the
        // ends are written, the links inside chains are not.
        let mut tail: Vec<Option<Vec<u8>>> = vec![None; n];
        let mut edges: Vec<Vec<(u8, usize)>> = vec![Vec::new(); n];
        let mut todo: Vec<usize> = (0..n)
            .filter(|&i| !reached.get(i).copied().unwrap_or(true))
            .collect();
        for &r in &todo {
            if let Some(t) = tail.get_mut(r) {
                *t = Some(Vec::new());
            }
        }
        while let Some(i) = todo.pop() {
            let Some(node) = self.nodes.get(i) else {
                continue;
            };
            for &(b, c) in &node.edges {
                let (end, t) = self.chain(c);
                if let Some(slot) = edges.get_mut(i) {
                    slot.push((b, end));
                }
                if let Some(slot) = tail.get_mut(end) {
                    *slot = Some(t);
                }
                todo.push(end);
            }
        }
        let base = w.here();
        let mut index = vec![NONE; n];
        let mut kept = 0u32;
        for (i, t) in tail.iter().enumerate() {
            if t.is_some() {
                if let Some(x) = index.get_mut(i) {
                    *x = base + kept * NODE_WORDS;
                }
                kept += 1;
            }
        }
        w.words
            .resize(w.words.len() + (kept * NODE_WORDS) as usize, 0);
        for (i, node) in self.nodes.iter().enumerate() {
            let Some(Some(t)) = tail.get(i) else { continue };
            let rec = index.get(i).copied().unwrap_or(NONE) as usize;
            let node_edges = edges.get(i).map(Vec::as_slice).unwrap_or_default();
            let labels: Vec<u8> = node_edges.iter().map(|e| e.0).collect();
            let (labels_at, _) = if labels.is_empty() {
                (0, 0)
            } else {
                w.raw(&labels)
            };
            let targets_at = w.here();
            for &(_, c) in node_edges {
                w.words.push(index.get(c).copied().unwrap_or(NONE));
            }
            // Verification records precede the payloads that point at them.
            let verifies: Vec<u32> = node
                .pay
                .iter()
                .map(|(_, mids)| {
                    if mids.is_empty() {
                        return NONE;
                    }
                    let pieces: Vec<(u32, u32)> = mids.iter().map(|m| w.raw(m)).collect();
                    let rec = w.here();
                    w.words.push(pieces.len() as u32);
                    for (o, l) in pieces {
                        w.words.extend_from_slice(&[o, l]);
                    }
                    rec
                })
                .collect();
            let pay_at = w.here();
            for ((id, _), v) in node.pay.iter().zip(verifies) {
                w.words.extend_from_slice(&[*id, v]);
            }
            let (tail_off, tail_len) = if t.is_empty() { (0, 0) } else { w.raw(t) };
            let sub = node.sub.and_then(|s| index.get(s).copied()).unwrap_or(NONE);
            for (k, v) in [
                labels_at,
                node_edges.len() as u32,
                targets_at,
                pay_at,
                node.pay.len() as u32,
                sub,
                tail_off,
                tail_len,
            ]
            .into_iter()
            .enumerate()
            {
                w.patch(rec + k, v);
            }
        }
        move |i: usize| index.get(i).copied().unwrap_or(NONE)
    }
}
