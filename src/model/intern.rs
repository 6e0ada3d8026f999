//! String interning: every name in a trace is stored once and referred to by a [`NameId`].

use super::fasthash::HashMap;

/// Index of an interned string in an [`Interner`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NameId(pub u32);

/// A table of unique strings. Lookups by id are a slice index; inserts hash once.
#[derive(Default, Debug, Clone)]
pub struct Interner {
    strings: Vec<Box<str>>,
    index: HashMap<Box<str>, u32>,
}

impl Interner {
    /// An interner whose id 0 is the empty string.
    pub fn new() -> Self {
        let mut i = Interner::default();
        i.intern("");
        i
    }

    /// Returns the id of `s`, inserting it the first time it is seen.
    pub fn intern(&mut self, s: &str) -> NameId {
        if let Some(&id) = self.index.get(s) {
            return NameId(id);
        }
        let id = self.strings.len() as u32;
        let boxed: Box<str> = s.into();
        self.strings.push(boxed.clone());
        self.index.insert(boxed, id);
        NameId(id)
    }

    /// Id of `s` if it was interned.
    pub fn get(&self, s: &str) -> Option<NameId> {
        self.index.get(s).map(|&i| NameId(i))
    }

    /// The string behind `id`.
    pub fn resolve(&self, id: NameId) -> &str {
        &self.strings[id.0 as usize]
    }

    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// True when nothing (not even the empty string) was interned.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }

    /// All strings in id order.
    pub fn iter(&self) -> impl Iterator<Item = (NameId, &str)> {
        self.strings
            .iter()
            .enumerate()
            .map(|(i, s)| (NameId(i as u32), &**s))
    }
}
