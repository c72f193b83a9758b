//! An intrusive doubly linked recency list over a slab: the links live inside the caller's
//! entries (any `T: Linked`, addressed by `u32` index), so moving an entry to the most recent
//! end or dropping the least recent one is O(1) and allocates nothing. Used by the API cache's
//! [`super::EntryStore`] and the trace replay's block cache for capacity eviction.

/// No entry.
const NIL: u32 = u32::MAX;

/// One entry's neighbours in the list (both `NIL` when the entry is not in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// The next less recently used entry.
    older: u32,
    /// The next more recently used entry.
    newer: u32,
}

impl Link {
    /// Not in any list.
    pub const UNLINKED: Link = Link { older: NIL, newer: NIL };
}

impl Default for Link {
    fn default() -> Self {
        Link::UNLINKED
    }
}

/// An entry that carries its own [`Link`].
pub trait Linked {
    fn link(&self) -> &Link;
    fn link_mut(&mut self) -> &mut Link;
}

/// The two ends of a recency list; the entries hold the links in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lru {
    /// Least recently used.
    oldest: u32,
    /// Most recently used.
    newest: u32,
}

impl Default for Lru {
    fn default() -> Self {
        Lru::new()
    }
}

impl Lru {
    /// An empty list.
    pub const fn new() -> Self {
        Lru { oldest: NIL, newest: NIL }
    }

    /// The least recently used entry.
    pub fn oldest(&self) -> Option<u32> {
        (self.oldest != NIL).then_some(self.oldest)
    }

    /// Make `i` (not in the list) the most recently used.
    #[inline]
    pub fn push_newest<T: Linked>(&mut self, nodes: &mut [T], i: u32) {
        debug_assert_eq!(*nodes[i as usize].link(), Link::UNLINKED);
        debug_assert_ne!(self.newest, i);
        let newest = self.newest;
        *nodes[i as usize].link_mut() = Link { older: newest, newer: NIL };
        match newest {
            NIL => self.oldest = i,
            n => nodes[n as usize].link_mut().newer = i,
        }
        self.newest = i;
    }

    /// Take `i` (in the list) out of it.
    #[inline]
    pub fn unlink<T: Linked>(&mut self, nodes: &mut [T], i: u32) {
        let Link { older, newer } = *nodes[i as usize].link();
        match older {
            NIL => {
                debug_assert_eq!(self.oldest, i, "unlinking an entry not in the list");
                self.oldest = newer;
            }
            o => nodes[o as usize].link_mut().newer = newer,
        }
        match newer {
            NIL => self.newest = older,
            n => nodes[n as usize].link_mut().older = older,
        }
        *nodes[i as usize].link_mut() = Link::UNLINKED;
    }

    /// Make `i` (in the list) the most recently used.
    #[inline]
    pub fn touch<T: Linked>(&mut self, nodes: &mut [T], i: u32) {
        if self.newest != i {
            self.unlink(nodes, i);
            self.push_newest(nodes, i);
        }
    }

    /// The entry used just after `i`, if any (walking from the old end, as an eviction that
    /// skips pinned entries does).
    pub fn newer<T: Linked>(&self, nodes: &[T], i: u32) -> Option<u32> {
        let newer = nodes[i as usize].link().newer;
        (newer != NIL).then_some(newer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Linked for Link {
        fn link(&self) -> &Link {
            self
        }
        fn link_mut(&mut self) -> &mut Link {
            self
        }
    }

    fn order(lru: &Lru, nodes: &[Link]) -> Vec<u32> {
        let oldest_first: Vec<u32> =
            std::iter::successors(lru.oldest(), |&i| lru.newer(nodes, i)).collect();
        oldest_first.into_iter().rev().collect()
    }

    #[test]
    fn push_touch_unlink_keep_recency_order() {
        let mut nodes = [Link::UNLINKED; 4];
        let mut lru = Lru::new();
        assert_eq!(lru.oldest(), None);
        for i in 0..4 {
            lru.push_newest(&mut nodes, i);
        }
        assert_eq!(order(&lru, &nodes), [3, 2, 1, 0]);
        lru.touch(&mut nodes, 1);
        assert_eq!(order(&lru, &nodes), [1, 3, 2, 0]);
        assert_eq!(lru.oldest(), Some(0));
        lru.unlink(&mut nodes, 0);
        lru.unlink(&mut nodes, 1);
        assert_eq!(order(&lru, &nodes), [3, 2]);
        assert_eq!((nodes[0], nodes[1]), (Link::UNLINKED, Link::UNLINKED));
        lru.unlink(&mut nodes, 3);
        lru.unlink(&mut nodes, 2);
        assert_eq!(lru.oldest(), None);
        assert_eq!(lru.oldest(), None);
        assert_eq!(order(&lru, &nodes), Vec::<u32>::new());
    }
}
