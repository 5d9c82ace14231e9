//! Parsing `#[prof::instrument(...)]`'s arguments.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, LitStr, Token};

/// The parsed options.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) name: Option<LitStr>,
    pub(crate) fields: Vec<(Ident, Expr)>,
    pub(crate) skip: Vec<Ident>,
    pub(crate) skip_all: bool,
}

struct Field {
    key: Ident,
    value: Expr,
}

impl Parse for Field {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let key: Ident = input.parse()?;
        if !input.peek(Token![=]) {
            return Err(syn::Error::new(
                key.span(),
                format!("field `{key}` needs a value: write `{key} = <expression>`"),
            ));
        }
        input.parse::<Token![=]>()?;
        Ok(Field {
            key,
            value: input.parse()?,
        })
    }
}

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut args = Args::default();
        while !input.is_empty() {
            let option: Ident = input.parse()?;
            match option.to_string().as_str() {
                "name" => {
                    if args.name.is_some() {
                        return Err(syn::Error::new(option.span(), "`name` is given twice"));
                    }
                    input.parse::<Token![=]>()?;
                    let lit = input.parse::<LitStr>().map_err(|e| {
                        syn::Error::new(e.span(), "`name` takes a string literal: name = \"...\"")
                    })?;
                    args.name = Some(lit);
                }
                "fields" => {
                    let content;
                    syn::parenthesized!(content in input);
                    let fields = Punctuated::<Field, Token![,]>::parse_terminated(&content)?;
                    args.fields.extend(fields.into_iter().map(|f| (f.key, f.value)));
                }
                "skip" => {
                    let content;
                    syn::parenthesized!(content in input);
                    let idents = Punctuated::<Ident, Token![,]>::parse_terminated(&content)?;
                    args.skip.extend(idents);
                }
                "skip_all" => args.skip_all = true,
                other => {
                    return Err(syn::Error::new(
                        option.span(),
                        format!("unknown #[prof::instrument] option `{other}`; expected `name`, `fields`, `skip` or `skip_all`"),
                    ))
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(args)
    }
}
