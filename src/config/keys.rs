//! Every dotted key of the experiment file, from its serde types (`file::ExperimentFile`): the
//! keys `serve`'s page offers and `tests/it/keys_extremes.rs` sets at their extremes, so a key
//! added to the file reaches both without a list to keep.

use std::cell::RefCell;
use std::collections::BTreeSet;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::file::ExperimentFile;

/// Every dotted key of the experiment file, derived from its serde types: a deserializer that
/// answers each struct with its own field names and records the path of every value that is
/// not a struct. A leaf stops the walk once (its type wants a real value); the next walk gives
/// it `None`, so each walk finds one more leaf until every one is known.
pub fn schema_keys() -> Vec<String> {
    let leaves = RefCell::new(BTreeSet::new());
    for _ in 0..10_000 {
        let found = RefCell::new(None);
        let walker = Walker { path: String::new(), leaves: &leaves, found: &found };
        if ExperimentFile::deserialize(walker).is_ok() {
            return leaves.into_inner().into_iter().collect();
        }
        let leaf = found.into_inner().expect("a walk stops only at a leaf");
        assert!(leaves.borrow_mut().insert(leaf), "the walk made no progress");
    }
    panic!("the schema has no end");
}

struct Walker<'a> {
    path: String,
    leaves: &'a RefCell<BTreeSet<String>>,
    found: &'a RefCell<Option<String>>,
}

impl<'de> Deserializer<'de> for Walker<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        *self.found.borrow_mut() = Some(self.path);
        Err(de::Error::custom("a leaf"))
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        match self.leaves.borrow().contains(&self.path) {
            true => v.visit_none(),
            false => v.visit_some(self),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Self::Error> {
        v.visit_map(Fields { walker: self, fields, next: 0 })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// A struct's fields as a map whose values are walked in turn.
struct Fields<'a> {
    walker: Walker<'a>,
    fields: &'static [&'static str],
    next: usize,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = de::value::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        let Some(name) = self.fields.get(self.next) else { return Ok(None) };
        seed.deserialize(de::value::StrDeserializer::new(name)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let name = self.fields[self.next];
        self.next += 1;
        let w = &self.walker;
        let path = match w.path.is_empty() {
            true => name.to_string(),
            false => format!("{}.{name}", w.path),
        };
        seed.deserialize(Walker { path, leaves: w.leaves, found: w.found })
    }
}
