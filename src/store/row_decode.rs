//! `Row::decode`: a row read into a struct whose fields are the columns the
//! statement selected, in order (`#[derive(Deserialize)]`), so that a plain
//! row type is declared once instead of decoded field by field in each
//! family. It is as strict as `Row::get`: text is only read from text, an
//! integer only from an integer, NULL only into an `Option`, a truth value
//! from an integer (both servers' booleans reach a `Row` as 0 or 1), and a
//! row with more or fewer columns than the struct has fields is an error.

use anyhow::{anyhow, Result};
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;

use crate::store::connection::{Cell, Row};

type Error = de::value::Error;

impl Row {
    /// The row as a `T` whose fields are its columns, in order.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T> {
        T::deserialize(Columns {
            cells: self.cells(),
        })
        .map_err(|e| anyhow!("{e}"))
    }
}

/// The row as a sequence of columns: a struct reads its fields from it.
struct Columns<'r> {
    cells: &'r [Cell],
}

impl<'de> de::Deserializer<'de> for Columns<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_seq(Fields {
            cells: self.cells.iter().enumerate(),
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        if fields.len() != self.cells.len() {
            return Err(de::Error::custom(format!(
                "reading a {name}: the row has {} columns for its {} fields",
                self.cells.len(),
                fields.len()
            )));
        }
        self.deserialize_any(visitor)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

struct Fields<'r> {
    cells: std::iter::Enumerate<std::slice::Iter<'r, Cell>>,
}

impl<'de> SeqAccess<'de> for Fields<'_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let Some((i, cell)) = self.cells.next() else {
            return Ok(None);
        };
        seed.deserialize(Value(cell))
            .map(Some)
            .map_err(|e| de::Error::custom(format!("reading column {i}: {e}")))
    }
}

/// One cell as a field's value.
struct Value<'r>(&'r Cell);

impl<'de> de::Deserializer<'de> for Value<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Cell::Null => visitor.visit_unit(),
            Cell::Int(v) => visitor.visit_i64(*v),
            Cell::Real(v) => visitor.visit_f64(*v),
            Cell::Text(v) => visitor.visit_str(v),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Cell::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Cell::Int(v) => visitor.visit_bool(*v != 0),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // A unit variant stored as its name.
        match self.0 {
            Cell::Text(v) => visitor.visit_enum(v.as_str().into_deserializer()),
            _ => self.deserialize_any(visitor),
        }
    }

    forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Sample {
        id: String,
        count: i64,
        seen_at: Option<i64>,
        active: bool,
        share: f64,
    }

    fn row(cells: Vec<Cell>) -> Row {
        Row::new(cells)
    }

    #[test]
    fn fields_are_read_from_the_columns_in_order() {
        let sample: Sample = row(vec![
            Cell::Text("a".into()),
            Cell::Int(3),
            Cell::Null,
            Cell::Int(1),
            Cell::Int(2),
        ])
        .decode()
        .unwrap();
        assert_eq!(
            sample,
            Sample {
                id: "a".into(),
                count: 3,
                seen_at: None,
                active: true,
                share: 2.0
            }
        );
    }

    #[test]
    fn a_cell_of_another_type_names_its_column() {
        let wrong = [
            (0, Cell::Int(1)),
            (1, Cell::Text("3".into())),
            (1, Cell::Null),
            (2, Cell::Text("x".into())),
            (3, Cell::Text("true".into())),
        ];
        for (column, cell) in wrong {
            let mut cells = vec![
                Cell::Text("a".into()),
                Cell::Int(3),
                Cell::Null,
                Cell::Int(0),
                Cell::Real(0.5),
            ];
            cells[column] = cell.clone();
            let err = row(cells).decode::<Sample>().unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("reading column {column}: ")),
                "{cell:?}: {err}"
            );
        }
    }

    #[test]
    fn a_row_of_another_width_is_an_error() {
        let err = row(vec![Cell::Text("a".into())])
            .decode::<Sample>()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "reading a Sample: the row has 1 columns for its 5 fields"
        );
    }
}
