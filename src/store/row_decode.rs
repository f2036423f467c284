//! `Row::decode`: a row read into a struct whose fields are the columns the
//! statement selected, in order (`#[derive(Deserialize)]`), so that a plain
//! row type is declared once instead of decoded field by field in each
//! family. It is as strict as `Row::get`: text is only read from text, an
//! integer only from an integer, NULL only into an `Option`, a truth value
//! from an integer (both servers' booleans reach a `Row` as 0 or 1), and a
//! row with more or fewer columns than the struct has fields is an error.
//! A column's value errs naming the column (`reading column 3: …`).

use anyhow::{anyhow, Result};
use serde::de::value::SeqDeserializer;
use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;

use crate::store::connection::{Cell, Row};

type Error = de::value::Error;

impl Row {
    /// The row as a `T` whose fields are its columns, in order. Serde's
    /// sequence says when the row is wider or narrower than `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T> {
        self.decode_from(0)
    }

    /// `decode` of the columns from `start` on: a table's columns selected
    /// after others in one row.
    pub fn decode_from<T: DeserializeOwned>(&self, start: usize) -> Result<T> {
        let columns = self.cells().iter().enumerate().skip(start);
        let row =
            SeqDeserializer::<_, Error>::new(columns.map(|(i, cell)| Column { i: Some(i), cell }));
        T::deserialize(row).map_err(|e| anyhow!("{e}"))
    }
}

/// One cell as a field's value; `i` names its column in an error (none
/// once inside an `Option`, whose value was named already).
struct Column<'r> {
    i: Option<usize>,
    cell: &'r Cell,
}

impl Column<'_> {
    fn at<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        match self.i {
            Some(i) => result.map_err(|e| de::Error::custom(format!("reading column {i}: {e}"))),
            None => result,
        }
    }
}

impl<'de> IntoDeserializer<'de, Error> for Column<'_> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> de::Deserializer<'de> for Column<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.at(match self.cell {
            Cell::Null => visitor.visit_unit(),
            Cell::Int(v) => visitor.visit_i64(*v),
            Cell::Real(v) => visitor.visit_f64(*v),
            Cell::Text(v) => visitor.visit_str(v),
        })
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.cell {
            Cell::Null => visitor.visit_none(),
            cell => self.at(visitor.visit_some(Column { i: None, cell })),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.cell {
            Cell::Int(v) => self.at(visitor.visit_bool(*v != 0)),
            _ => self.deserialize_any(visitor),
        }
    }

    forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
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
        let narrow = row(vec![Cell::Text("a".into())]).decode::<Sample>();
        let narrow = narrow.unwrap_err().to_string();
        assert_eq!(
            narrow,
            "invalid length 1, expected struct Sample with 5 elements"
        );
        let wide = row(vec![
            Cell::Text("a".into()),
            Cell::Int(3),
            Cell::Null,
            Cell::Int(0),
            Cell::Real(0.5),
            Cell::Int(9),
        ])
        .decode::<Sample>();
        let wide = wide.unwrap_err().to_string();
        assert!(wide.starts_with("invalid length 6"), "{wide}");
    }
}
