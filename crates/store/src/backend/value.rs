//! The values and rows of the SQL surface both backends share: what a statement binds
//! ([`Value`], built with [`vals!`]), what a query returns ([`Row`], read typed, naming the column
//! when it is not what the caller expects), and the placeholder translation PostgreSQL needs.

use crate::error::StoreError;

/// A value bound to or read from a column: the four kinds scalelab stores (bytes: the files of
/// `run_files` only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Null,
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
}

impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Value {
        Value::Bytes(v.to_vec())
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(i64::from(v))
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Value {
        Value::Text(v.clone())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// Builds a `&[Value]` parameter list: `vals![id, name]`.
macro_rules! vals {
    ($($v:expr),* $(,)?) => { &[$($crate::backend::Value::from($v)),*][..] };
}
pub(crate) use vals;

/// One result row.
#[derive(Debug)]
pub(crate) struct Row(pub(crate) Vec<Value>);

impl Row {
    fn column(&self, i: usize) -> Result<&Value, StoreError> {
        self.0.get(i).ok_or_else(|| column_error(i, "missing"))
    }

    pub(crate) fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        match self.column(i)? {
            Value::Null => Ok(None),
            Value::Int(v) => Ok(Some(*v)),
            Value::Text(_) | Value::Bytes(_) => {
                Err(column_error(i, "text or bytes where an integer belongs"))
            }
        }
    }

    pub(crate) fn int(&self, i: usize) -> Result<i64, StoreError> {
        self.opt_int(i)?
            .ok_or_else(|| column_error(i, "NULL where an integer belongs"))
    }

    pub(crate) fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        match self.column(i)? {
            Value::Null => Ok(None),
            Value::Text(v) => Ok(Some(v.clone())),
            Value::Int(_) | Value::Bytes(_) => {
                Err(column_error(i, "an integer or bytes where text belongs"))
            }
        }
    }

    pub(crate) fn bytes(&self, i: usize) -> Result<Vec<u8>, StoreError> {
        match self.column(i)? {
            Value::Bytes(v) => Ok(v.clone()),
            _ => Err(column_error(i, "not bytes where bytes belong")),
        }
    }

    pub(crate) fn text(&self, i: usize) -> Result<String, StoreError> {
        self.opt_text(i)?
            .ok_or_else(|| column_error(i, "NULL where text belongs"))
    }

    pub(crate) fn u32(&self, i: usize) -> Result<u32, StoreError> {
        u32::try_from(self.int(i)?).map_err(|_| column_error(i, "out of range for a count"))
    }
}

pub(super) fn column_error(index: usize, detail: &str) -> StoreError {
    StoreError::Column {
        index,
        detail: detail.to_owned(),
    }
}

/// `?1`, `?2` … as PostgreSQL's `$1`, `$2` …; the SQL text written here has no `?` elsewhere.
pub(crate) fn dollar_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_translated_and_nothing_else() {
        assert_eq!(
            dollar_placeholders("SELECT a FROM t WHERE x = ?1 AND y IN (?2, ?10) -- ?"),
            "SELECT a FROM t WHERE x = $1 AND y IN ($2, $10) -- ?"
        );
    }

    #[test]
    fn rows_read_typed_and_name_the_column_when_wrong() {
        let row = Row(vec![Value::Int(7), Value::Null, Value::Text("x".into())]);
        assert_eq!(row.int(0).unwrap(), 7);
        assert_eq!(row.opt_int(1).unwrap(), None);
        assert_eq!(row.text(2).unwrap(), "x");
        let err = row.int(2).unwrap_err().to_string();
        assert!(err.contains("column 2"), "{err}");
        assert!(row.text(1).is_err());
        assert!(row.int(3).is_err());
    }
}
