//! Code generation for `#[prof::instrument]`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, Pat, Type};

use crate::attr::Args;

/// Types whose values a prof field holds as they are (see `profiler_core::AsValue`).
const RECORDABLE: &[&str] = &[
    "i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize", "f32", "f64", "bool",
    "String", "str",
];

fn recordable(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => recordable(&r.elem),
        Type::Paren(p) => recordable(&p.elem),
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|s| {
            s.arguments.is_empty() && RECORDABLE.contains(&s.ident.to_string().as_str())
        }),
        _ => false,
    }
}

/// The function's plain `name: Type` arguments, and whether each can be recorded.
fn arguments(item: &ItemFn) -> Vec<(Ident, bool)> {
    item.sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(t) => match &*t.pat {
                Pat::Ident(p) => Some((p.ident.clone(), recordable(&t.ty))),
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .collect()
}

pub(crate) fn instrument(args: Args, item: ItemFn) -> syn::Result<TokenStream> {
    if let Some(constness) = &item.sig.constness {
        return Err(syn::Error::new(
            constness.span(),
            "#[prof::instrument] cannot record a `const fn`: remove `const` or the attribute",
        ));
    }
    let params = arguments(&item);
    for skipped in &args.skip {
        if !params.iter().any(|(p, _)| p == skipped) {
            return Err(syn::Error::new(
                skipped.span(),
                format!("`{skipped}` in skip(...) is not an argument of this function"),
            ));
        }
    }
    let name = match &args.name {
        Some(lit) => quote!(#lit),
        None => {
            let n = item.sig.ident.to_string();
            quote!(#n)
        }
    };
    let mut keys = Vec::new();
    let mut values = Vec::new();
    if !args.skip_all {
        for (param, ok) in &params {
            if *ok && !args.skip.contains(param) {
                keys.push(param.clone());
                values.push(quote!(#param));
            }
        }
    }
    for (key, value) in &args.fields {
        keys.push(key.clone());
        values.push(quote_spanned!(value.span()=> #value));
    }

    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = item;
    let body = if sig.asyncness.is_some() {
        let set_fields = if keys.is_empty() {
            quote!()
        } else {
            quote! {
                ::prof::__private::with_current_poll(|__prof_poll| {
                    #( __prof_poll.set_metadata(::core::stringify!(#keys), &#values); )*
                });
            }
        };
        quote! {
            ::prof::__private::Instrumented::new(async move {
                #set_fields
                #block
            }, #name).await
        }
    } else {
        quote! {
            let __prof_guard = ::prof::trace!(#name #(, #keys = #values)*);
            #block
        }
    };
    Ok(quote! {
        #(#attrs)*
        #vis #sig {
            #body
        }
    })
}
