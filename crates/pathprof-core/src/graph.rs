//! Adjacency lists stored flat (compressed rows): the lists of all nodes in one vector, so building
//! them costs two allocations whatever the size of the graph. The CFG, the DAG and the analyses over
//! them (numbering, placement, loop nesting) walk their edges through these. Serialized, they are a
//! list of lists.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::ops::{Index, IndexMut};

/// Items (edge ids by default) grouped by node; `adjacency[v]` is the slice of node `v`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Adjacency<T = u32> {
    /// `start[v]..start[v + 1]` is node `v`'s range of `items`.
    start: Vec<u32>,
    items: Vec<T>,
}

impl<T: Copy + Default> Adjacency<T> {
    /// Groups `(node, item)` pairs by node, keeping their order within each node; nodes are below
    /// `nodes`.
    pub fn group(nodes: usize, pairs: impl Iterator<Item = (u32, T)> + Clone) -> Adjacency<T> {
        let mut start = vec![0u32; nodes + 1];
        for (v, _) in pairs.clone() {
            start[v as usize + 1] += 1;
        }
        for v in 0..nodes {
            start[v + 1] += start[v];
        }
        let mut next = start.clone();
        let mut items = vec![T::default(); start[nodes] as usize];
        for (v, item) in pairs {
            items[next[v as usize] as usize] = item;
            next[v as usize] += 1;
        }
        Adjacency { start, items }
    }

    /// The slice of node `v`, or `None` when there is no such node.
    pub fn get(&self, v: usize) -> Option<&[T]> {
        (v < self.len()).then(|| &self[v])
    }

    /// The slices of all nodes, in node order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[T]> + '_ {
        (0..self.len()).map(|v| &self[v])
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.start.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Index<usize> for Adjacency<T> {
    type Output = [T];

    fn index(&self, v: usize) -> &[T] {
        &self.items[self.start[v] as usize..self.start[v + 1] as usize]
    }
}

impl<T> IndexMut<usize> for Adjacency<T> {
    fn index_mut(&mut self, v: usize) -> &mut [T] {
        &mut self.items[self.start[v] as usize..self.start[v + 1] as usize]
    }
}

/// Something derived from a graph's edges, computed on first use and kept. It takes no part in
/// comparisons, since the edges determine it, and is not serialized.
#[derive(Clone, Debug)]
pub struct Derived<T>(std::sync::OnceLock<T>);

impl<T> Derived<T> {
    /// The value, computed by `f` on first use.
    pub fn get_or_init(&self, f: impl FnOnce() -> T) -> &T {
        self.0.get_or_init(f)
    }
}

impl<T> Default for Derived<T> {
    fn default() -> Self {
        Derived(std::sync::OnceLock::new())
    }
}

impl<T> PartialEq for Derived<T> {
    fn eq(&self, _: &Derived<T>) -> bool {
        true
    }
}

impl<T> Eq for Derived<T> {}

impl<T: Copy + Default + Serialize> Serialize for Adjacency<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de, T: Copy + Default + Deserialize<'de>> Deserialize<'de> for Adjacency<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let lists = Vec::<Vec<T>>::deserialize(deserializer)?;
        let pairs = lists.iter().enumerate().flat_map(|(v, list)| list.iter().map(move |&x| (v as u32, x)));
        Ok(Adjacency::group(lists.len(), pairs))
    }
}

/// A vector of flags serialized as a string of `0`s and `1`s, one character a flag: a large
/// function's DAG has millions (`#[serde(with = "bits")]`).
pub mod bits {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(flags: &[bool], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&flags.iter().map(|&f| if f { '1' } else { '0' }).collect::<String>())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<bool>, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        text.chars()
            .map(|c| match c {
                '0' => Ok(false),
                '1' => Ok(true),
                other => Err(D::Error::custom(format!("{other:?} is not a flag (0 or 1)"))),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_in_order() {
        let pairs = [(2, 10), (0, 11), (2, 12), (3, 13), (0, 14)];
        let a = Adjacency::group(5, pairs.iter().copied());
        assert_eq!(a.len(), 5);
        assert_eq!(&a[0], &[11, 14]);
        assert_eq!(&a[1], &[] as &[u32]);
        assert_eq!(&a[2], &[10, 12]);
        assert_eq!(&a[3], &[13]);
        assert_eq!(&a[4], &[] as &[u32]);
        assert_eq!(a.get(3), Some(&[13][..]));
        assert_eq!(a.get(5), None);
        assert_eq!(a.iter().map(<[u32]>::len).collect::<Vec<_>>(), [2, 0, 2, 1, 0]);
    }

    #[test]
    fn flags_serialize_as_a_string_of_bits() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Flags(#[serde(with = "super::bits")] Vec<bool>);
        let f = Flags(vec![true, false, false, true]);
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(json, "\"1001\"");
        assert_eq!(serde_json::from_str::<Flags>(&json).unwrap(), f);
        assert!(serde_json::from_str::<Flags>("\"10x\"").is_err());
        assert_eq!(serde_json::from_str::<Flags>("\"\"").unwrap(), Flags(Vec::new()));
    }

    #[test]
    fn serializes_as_lists() {
        let a = Adjacency::group(3, [(2, 7u32), (0, 5), (2, 6)].into_iter());
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, "[[5],[],[7,6]]");
        assert_eq!(serde_json::from_str::<Adjacency>(&json).unwrap(), a);
    }
}
