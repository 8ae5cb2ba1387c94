//! Closed sets of named things (error kinds, request types, outcomes,
//! faults): one table gives each variant its stable short name and its
//! one-line description, which logs, reports and docs reuse. Persisted
//! names only grow at the end.

/// Defines an enum from a table of `Variant = "name": "description",`
/// rows, with `ALL`, `COUNT`, `name()`, `description()` and `from_name()`.
#[macro_export]
macro_rules! closed_set {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $str:literal : $desc:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant,)* }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];
            pub const COUNT: usize = Self::ALL.len();
            /// Stable short name used in logs, reports and docs.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $str,)* }
            }
            /// One-line description for reports and docs.
            pub fn description(self) -> &'static str {
                match self { $($name::$variant => $desc,)* }
            }
            pub fn from_name(s: &str) -> Option<$name> {
                Self::ALL.iter().copied().find(|k| k.name() == s)
            }
        }

        /// Serialized as its stable name.
        impl $crate::serde::Serialize for $name {
            fn serialize<S: $crate::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    closed_set! {
        /// A set for these tests.
        Sample {
            One = "one": "the first",
            Two = "two": "the second",
        }
    }

    #[test]
    fn names_descriptions_and_lookup_come_from_the_table() {
        assert_eq!(Sample::COUNT, 2);
        assert_eq!(Sample::Two.name(), "two");
        assert_eq!(Sample::One.description(), "the first");
        assert_eq!(Sample::from_name("two"), Some(Sample::Two));
        assert_eq!(Sample::from_name("three"), None);
    }
}
