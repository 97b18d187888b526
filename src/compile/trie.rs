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
pub(super) struct Trie {
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

    /// Writes every node, edge, payload and verification record; returns the
    /// word offset of a node given its index.
    pub fn write(mut self, w: &mut Writer) -> impl Fn(usize) -> u32 {
        let base = w.here();
        let n = self.nodes.len();
        w.words.resize(w.words.len() + n * NODE_WORDS as usize, 0);
        let at = move |i: usize| base + (i as u32) * NODE_WORDS;
        for (i, node) in self.nodes.iter_mut().enumerate() {
            node.pay.sort_by_key(|p| p.0);
            node.pay.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
            let edges_at = w.here();
            for &(b, c) in &node.edges {
                w.words.extend_from_slice(&[u32::from(b), at(c)]);
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
            let rec = at(i) as usize;
            w.patch(rec, edges_at);
            w.patch(rec + 1, node.edges.len() as u32);
            w.patch(rec + 2, pay_at);
            w.patch(rec + 3, node.pay.len() as u32);
            w.patch(rec + 4, node.sub.map_or(NONE, at));
        }
        at
    }
}
