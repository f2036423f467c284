//! `string_enum!`: a closed vocabulary of stored and printed words as a
//! Rust enum, each variant with its one spelling. Run states, policies,
//! notice kinds, held-back reasons and MCP tools all take this shape, so
//! the compiler names every place a new word must be handled. (An open
//! vocabulary, which must still read words a newer build wrote, is
//! `audit::open_string_enum!`.)

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn parse(text: &str) -> Option<$name> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }

            /// The accepted spellings, for error messages and help.
            #[allow(dead_code)] // a vocabulary no person types has no use for it
            pub fn spellings() -> String {
                [$($text),+].join(", ")
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub(crate) use string_enum;
