//! Where a function's two copies switch: the switch points, each body's wrappers and dispatch, and
//! the branches renumbered across wrappers.

use super::{Close, OpSwitch, Open, Relabel, Switches};
use crate::cfg::{
    catch_label, FuncCfg, OPCODE_BLOCK, OPCODE_ELSE, OPCODE_END, OPCODE_IF, OPCODE_LOOP, OPCODE_TRY_TABLE,
};
use std::borrow::Cow;
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{BlockType, Catch, Instruction};
use wasmparser::{BinaryReaderError, FunctionBody, Operator};
/// A construct of the body, in the order of its opening operator.
struct Construct {
    /// The body holding it: the construct's index plus one and its arm (0, or 1 for an else-arm);
    /// 0 for the function's body.
    body: usize,
    is_if: bool,
    /// A loop that is a switch point (numbered `first`).
    point: bool,
    /// Points numbered before it, before its else-arm, and before its end (plus one).
    first: u32,
    else_first: u32,
    last: u32,
}

/// Plans the switches of a function whose body is `body` (with CFG `fcfg`, its paths starting at the
/// `cut` blocks).
pub(crate) fn plan(fcfg: &FuncCfg, cut: &[bool], body: &FunctionBody) -> Result<Switches, BinaryReaderError> {
    let bytes = body.as_bytes();
    let opcode = |i: usize| bytes[fcfg.op_offsets[i] as usize];
    // The headers that start paths, by their `loop` operator.
    let mut path_header = vec![false; fcfg.num_ops];
    for &(op, b) in &fcfg.block_starts {
        if fcfg.blocks[b as usize].loop_header && cut.get(b as usize).copied().unwrap_or(false) {
            path_header[op] = true;
        }
    }
    // Constructs and points. `open` holds the constructs around the operator: index, arm, and
    // whether they and all around them are entered with an empty stack.
    let mut constructs: Vec<Construct> = Vec::new();
    let mut open: Vec<(usize, usize, bool)> = Vec::new();
    let mut next = 1u32;
    let last_op = fcfg.num_ops - 1;
    for (i, &is_header) in path_header.iter().enumerate().take(last_op) {
        match opcode(i) {
            OPCODE_BLOCK | OPCODE_LOOP | OPCODE_IF | OPCODE_TRY_TABLE => {
                let (body, clean_around) = open.last().map_or((0, true), |&(c, arm, clean)| (2 * (c + 1) + arm, clean));
                let clean = clean_around && fcfg.empty_stack_opens.binary_search(&i).is_ok();
                let is_point = clean && opcode(i) == OPCODE_LOOP && is_header;
                constructs.push(Construct {
                    body,
                    is_if: opcode(i) == OPCODE_IF,
                    point: is_point,
                    first: next,
                    else_first: 0,
                    last: 0,
                });
                next += u32::from(is_point);
                open.push((constructs.len() - 1, 0, clean));
            }
            OPCODE_ELSE => {
                let top = open.last_mut().expect("validated: else inside if");
                top.1 = 1;
                constructs[top.0].else_first = next;
            }
            OPCODE_END => {
                let (c, arm, _) = open.pop().expect("validated: end of a construct");
                if arm == 0 {
                    constructs[c].else_first = next;
                }
                constructs[c].last = next;
            }
            _ => {}
        }
    }
    // The children holding points of every body (0: the function's; 2(c + 1) + arm: construct c's).
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); 2 * (constructs.len() + 1)];
    for (c, k) in constructs.iter().enumerate() {
        if k.last > k.first {
            children[k.body].push(c);
        }
    }
    let open_of = |key: usize, point: Option<u32>, depth_before: u32| -> Option<Open> {
        let ch = &children[key];
        if ch.is_empty() && point.is_none() {
            return None;
        }
        let mut bounds: Vec<u32> = ch.iter().map(|&c| constructs[c].first).collect();
        if let Some(&c) = ch.last() {
            bounds.push(constructs[c].last);
        }
        Some(Open { wrappers: ch.len() as u32, bounds, point, depth: depth_before + ch.len() as u32 })
    };

    // Second pass: wrappers open in each body around the operator, and the operators' labels.
    // `frames`: (construct or usize::MAX for the function's body, wrappers still open).
    let mut frames: Vec<(usize, u32)> = vec![(usize::MAX, 0)];
    let entry = open_of(0, None, 0).unwrap_or_default();
    frames[0].1 = entry.wrappers;
    let mut at: Vec<(usize, OpSwitch)> = Vec::new();
    let mut reader = body.get_operators_reader()?;
    let mut c_next = 0usize;
    // The wrappers that a branch of relative depth `depth` leaves (the function's label is the
    // deepest); and the labels around the code at the end of `frames`, up to the function's.
    let shift = |frames: &[(usize, u32)], depth: u32| -> u32 {
        frames.iter().rev().take(depth as usize + 1).map(|&(_, w)| w).sum()
    };
    let all_wrappers = |frames: &[(usize, u32)]| -> u32 { frames.iter().map(|&(_, w)| w).sum() };
    let labels_open = |frames: &[(usize, u32)]| -> u32 { (frames.len() - 1) as u32 + all_wrappers(frames) };
    let mut i = 0usize;
    while !reader.eof() {
        let op = reader.read()?;
        let mut s = OpSwitch::default();
        let relabel = |d: u32, frames: &[(usize, u32)]| d + shift(frames, d);
        match &op {
            Operator::Block { .. } | Operator::Loop { .. } | Operator::If { .. } | Operator::TryTable { .. } => {
                let c = c_next;
                c_next += 1;
                let k = &constructs[c];
                if k.last > k.first {
                    frames.last_mut().expect("inside the body").1 -= 1;
                    s.close = Some(if k.is_if {
                        Close::If { then_last: (k.else_first > k.first).then(|| k.else_first - 1) }
                    } else {
                        Close::Block
                    });
                }
                if let Operator::TryTable { try_table } = &op {
                    let moved = try_table.catches.iter().any(|c| shift(&frames, catch_label(c)) > 0);
                    if moved {
                        let catches = try_table
                            .catches
                            .iter()
                            .map(|c| {
                                let l = relabel(catch_label(c), &frames);
                                match *c {
                                    wasmparser::Catch::One { tag, .. } => Catch::One { tag, label: l },
                                    wasmparser::Catch::OneRef { tag, .. } => Catch::OneRef { tag, label: l },
                                    wasmparser::Catch::All { .. } => Catch::All { label: l },
                                    wasmparser::Catch::AllRef { .. } => Catch::AllRef { label: l },
                                }
                            })
                            .collect::<Vec<_>>();
                        let ty = block_type(try_table.ty);
                        s.relabel = Some(Relabel::Op(Instruction::TryTable(ty, Cow::Owned(catches))));
                    }
                }
                frames.push((c, 0));
                let depth = labels_open(&frames);
                s.open = open_of(2 * (c + 1), k.point.then_some(k.first), depth);
                frames.last_mut().expect("just pushed").1 = s.open.as_ref().map_or(0, |o| o.wrappers);
            }
            Operator::Else => {
                let top = frames.last().expect("inside an if").0;
                debug_assert_eq!(frames.last().map(|f| f.1), Some(0), "every wrapper ends before its child");
                let depth = labels_open(&frames);
                s.open = open_of(2 * (top + 1) + 1, None, depth);
                frames.last_mut().expect("inside an if").1 = s.open.as_ref().map_or(0, |o| o.wrappers);
            }
            Operator::End if frames.len() > 1 => {
                frames.pop();
            }
            Operator::Br { relative_depth } if shift(&frames, *relative_depth) > 0 => {
                s.relabel = Some(Relabel::Op(Instruction::Br(relabel(*relative_depth, &frames))));
            }
            Operator::BrIf { relative_depth } if shift(&frames, *relative_depth) > 0 => {
                s.relabel = Some(Relabel::Op(Instruction::BrIf(relabel(*relative_depth, &frames))));
            }
            Operator::BrOnNull { relative_depth } if shift(&frames, *relative_depth) > 0 => {
                s.relabel = Some(Relabel::Op(Instruction::BrOnNull(relabel(*relative_depth, &frames))));
            }
            Operator::BrOnNonNull { relative_depth } if shift(&frames, *relative_depth) > 0 => {
                s.relabel = Some(Relabel::Op(Instruction::BrOnNonNull(relabel(*relative_depth, &frames))));
            }
            Operator::BrOnCast { relative_depth, from_ref_type, to_ref_type }
            | Operator::BrOnCastFail { relative_depth, from_ref_type, to_ref_type }
                if shift(&frames, *relative_depth) > 0 =>
            {
                let (relative_depth, from_ref_type, to_ref_type) =
                    (relabel(*relative_depth, &frames), ref_type(*from_ref_type), ref_type(*to_ref_type));
                s.relabel = Some(Relabel::Op(match op {
                    Operator::BrOnCast { .. } => Instruction::BrOnCast { relative_depth, from_ref_type, to_ref_type },
                    _ => Instruction::BrOnCastFail { relative_depth, from_ref_type, to_ref_type },
                }));
            }
            Operator::BrTable { targets } => {
                let depths: Vec<u32> = targets.targets().collect::<Result<_, _>>()?;
                let default = targets.default();
                if depths.iter().chain([&default]).any(|&d| shift(&frames, d) > 0) {
                    let depths = depths.into_iter().map(|d| relabel(d, &frames)).collect::<Vec<_>>();
                    let default = relabel(default, &frames);
                    s.relabel = Some(Relabel::Op(Instruction::BrTable(Cow::Owned(depths), default)));
                }
            }
            Operator::Return if all_wrappers(&frames) > 0 => {
                s.relabel = Some(Relabel::Return(labels_open(&frames)));
            }
            _ => {}
        }
        if s.close.is_some() || s.relabel.is_some() || s.open.is_some() {
            at.push((i, s));
        }
        i += 1;
    }
    Ok(Switches { entry, at })
}

fn block_type(ty: wasmparser::BlockType) -> BlockType {
    RoundtripReencoder.block_type(ty).expect("block types re-encode")
}

fn ref_type(ty: wasmparser::RefType) -> wasm_encoder::RefType {
    RoundtripReencoder.ref_type(ty).expect("reference types re-encode")
}
