//! The in-memory header list: [`Header`] and [`Headers`], their accessors and
//! conversions. The stored form is the codec's business (`codec`).

/// One header: a name and a possibly null value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The header name. Need not be unique within a [`Headers`].
    pub name: String,
    /// The value; `None` is a null value, distinct from an empty one.
    pub value: Option<Vec<u8>>,
}

/// An ordered list of headers. Order and duplicate names are kept as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    pub(super) headers: Vec<Header>,
}

impl Headers {
    /// An empty header list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a header after the existing ones, even if the name is already present.
    pub fn push(&mut self, name: impl Into<String>, value: Option<Vec<u8>>) {
        self.headers.push(Header {
            name: name.into(),
            value,
        });
    }

    /// The headers, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Header> {
        self.headers.iter()
    }

    /// Number of headers, duplicates included.
    pub fn len(&self) -> usize {
        self.headers.len()
    }

    /// Whether there are no headers.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }

    /// The first header called `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Header> {
        self.headers.iter().find(|header| header.name == name)
    }
}

impl FromIterator<Header> for Headers {
    fn from_iter<I: IntoIterator<Item = Header>>(iter: I) -> Self {
        Headers {
            headers: iter.into_iter().collect(),
        }
    }
}

impl From<Vec<Header>> for Headers {
    fn from(headers: Vec<Header>) -> Self {
        Headers { headers }
    }
}

impl IntoIterator for Headers {
    type Item = Header;
    type IntoIter = std::vec::IntoIter<Header>;

    fn into_iter(self) -> Self::IntoIter {
        self.headers.into_iter()
    }
}

impl<'a> IntoIterator for &'a Headers {
    type Item = &'a Header;
    type IntoIter = std::slice::Iter<'a, Header>;

    fn into_iter(self) -> Self::IntoIter {
        self.headers.iter()
    }
}

#[cfg(test)]
#[path = "list_tests.rs"]
mod tests;
