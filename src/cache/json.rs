//! JSON as it was sent: a value whose objects keep their keys in the order of the text.
//!
//! The API caches the bytes it is sent, and a `tool_use` input whose keys come back in another
//! order is other bytes: it misses (the prompt-caching docs warn about clients that randomise
//! key order). `serde_json::Value` sorts object keys (its map is a `BTreeMap` unless a crate
//! feature changes it for the whole build), so request bodies are read into [`Json`] instead:
//! parsed from text with the order kept, or converted from a `Value` in that value's own order.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};
use std::fmt;

/// A JSON value with object keys in the order they were written.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    /// Keys in document order; a repeated key keeps every occurrence (`get` finds the last,
    /// as `serde_json` keeps the last).
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The value of `key` in an object (its last occurrence); `None` for other values.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Json]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&[(String, Json)]> {
        match self {
            Json::Object(entries) => Some(entries),
            _ => None,
        }
    }

    /// Whether this is an object with `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Compact JSON text (as `serde_json` writes it), keys in their order.
    pub fn write_compact(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => out.push_str(&n.to_string()),
            Json::String(s) => write_string(s, out),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_compact(out);
                }
                out.push(']');
            }
            Json::Object(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(k, out);
                    out.push(':');
                    v.write_compact(out);
                }
                out.push('}');
            }
        }
    }
}

/// A JSON string literal, escaped exactly as `serde_json` escapes it.
pub fn write_string(s: &str, out: &mut String) {
    out.push_str(&serde_json::to_string(s).expect("a string always serialises"));
}

impl From<&Value> for Json {
    /// In the value's own iteration order (sorted keys for a default `serde_json` build).
    fn from(v: &Value) -> Self {
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.clone()),
            Value::String(s) => Json::String(s.clone()),
            Value::Array(items) => Json::Array(items.iter().map(Json::from).collect()),
            Value::Object(map) => {
                Json::Object(map.iter().map(|(k, v)| (k.clone(), Json::from(v))).collect())
            }
        }
    }
}

impl std::str::FromStr for Json {
    type Err = serde_json::Error;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        serde_json::from_str(text)
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        Json::deserialize(d)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }
    fn visit_i64<E>(self, x: i64) -> Result<Json, E> {
        Ok(Json::Number(x.into()))
    }
    fn visit_u64<E>(self, x: u64) -> Result<Json, E> {
        Ok(Json::Number(x.into()))
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Json, E> {
        Number::from_f64(x).map(Json::Number).ok_or_else(|| E::custom("a non-finite number"))
    }
    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            entries.push((k, v));
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_keeps_key_order_and_writes_back_compact() {
        let text = r#"{ "b": 1, "a": [true, null, "x\"y", 2.5, -3], "c": {"z": {}, "y": []} }"#;
        let j: Json = text.parse().unwrap();
        let mut out = String::new();
        j.write_compact(&mut out);
        assert_eq!(out, r#"{"b":1,"a":[true,null,"x\"y",2.5,-3],"c":{"z":{},"y":[]}}"#);
        // serde_json's Value sorts: the same text gives other bytes there.
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(v.to_string(), r#"{"a":[true,null,"x\"y",2.5,-3],"b":1,"c":{"y":[],"z":{}}}"#);
        // From a Value: that value's (sorted) order; scalars written as serde_json writes them.
        let mut from_value = String::new();
        Json::from(&v).write_compact(&mut from_value);
        assert_eq!(from_value, v.to_string());
    }

    #[test]
    fn get_finds_the_last_occurrence_like_serde_json() {
        let j: Json = r#"{"k": 1, "k": 2}"#.parse().unwrap();
        assert_eq!(j.get("k"), Some(&Json::Number(2.into())));
        assert_eq!(j.get("missing"), None);
        assert!(j.contains_key("k"));
    }
}
