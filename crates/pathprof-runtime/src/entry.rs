//! The program's entry point: `_start`, or an export named by `--invoke` with arguments parsed from
//! the command line, its results formatted one per line.

use crate::outcome::{NoEntry, RunConfig};
use anyhow::{anyhow, bail, Result};
use wasmtime::{Store, Val, ValType};

/// Calls the program's entry point; an entry point that cannot be called is a [`NoEntry`] error.
pub(crate) fn call_entry<T: 'static>(
    store: &mut Store<T>,
    instance: &wasmtime::Instance,
    config: &RunConfig,
    results: &mut Vec<String>,
) -> wasmtime::Result<()> {
    match &config.invoke {
        None => {
            let start = instance.get_typed_func::<(), ()>(&mut *store, "_start").map_err(|_| {
                wasmtime::Error::new(NoEntry("the module exports no `_start` function; use --invoke FUNC".into()))
            })?;
            start.call(&mut *store, ())
        }
        Some(name) => {
            let func = instance
                .get_func(&mut *store, name)
                .ok_or_else(|| wasmtime::Error::new(NoEntry(format!("the module exports no function `{name}`"))))?;
            let ty = func.ty(&*store);
            let args: Vec<&String> = config.args.iter().skip(1).collect();
            if args.len() != ty.params().len() {
                return Err(wasmtime::Error::new(NoEntry(format!(
                    "`{name}` takes {} arguments, {} given",
                    ty.params().len(),
                    args.len()
                ))));
            }
            let params = ty
                .params()
                .zip(args)
                .map(|(t, a)| parse_val(&t, a))
                .collect::<Result<Vec<_>>>()
                .map_err(|e| wasmtime::Error::new(NoEntry(e.to_string())))?;
            let mut out = vec![Val::I32(0); ty.results().len()];
            func.call(&mut *store, &params, &mut out)?;
            results.extend(out.iter().map(format_val));
            Ok(())
        }
    }
}

fn parse_val(ty: &ValType, s: &str) -> Result<Val> {
    let bad = || anyhow!("cannot read {s:?} as {ty}");
    Ok(match ty {
        ValType::I32 => Val::I32(s.parse::<i32>().or_else(|_| s.parse::<u32>().map(|v| v as i32)).map_err(|_| bad())?),
        ValType::I64 => Val::I64(s.parse::<i64>().or_else(|_| s.parse::<u64>().map(|v| v as i64)).map_err(|_| bad())?),
        ValType::F32 => Val::F32(s.parse::<f32>().map_err(|_| bad())?.to_bits()),
        ValType::F64 => Val::F64(s.parse::<f64>().map_err(|_| bad())?.to_bits()),
        _ => bail!("--invoke supports only numeric parameters"),
    })
}

fn format_val(v: &Val) -> String {
    match v {
        Val::I32(x) => x.to_string(),
        Val::I64(x) => x.to_string(),
        Val::F32(x) => f32::from_bits(*x).to_string(),
        Val::F64(x) => f64::from_bits(*x).to_string(),
        other => format!("{other:?}"),
    }
}
