//! NB5's `ToBigDecimal` (virtdata `from_long`, `from_int`, `from_double` and
//! `from_string` `to_bigdecimal/ToBigDecimal.java`): the value as a
//! `java.math.BigDecimal`, printed by its `toString()`. A decimal here is its
//! sign, its coefficient's digits and its scale, as Java's; rounding to a
//! `MathContext` follows `BigDecimal`'s rules (each of Java's eight modes).

use super::Func;
use super::compile::Ctx;
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::parse::Arg;
use crate::activity::bindings::value::{Kind, Value};

/// The names compiled here.
pub(crate) const NAMES: &[&str] = &["ToBigDecimal"];

/// How each function here is called, for messages.
pub(crate) fn usage(name: &str) -> Option<&'static str> {
    (name == "ToBigDecimal").then_some(
        "`ToBigDecimal()`, `ToBigDecimal(scale)` (on an integer) or \
         `ToBigDecimal('precision=5 roundingMode=HALF_EVEN')` (or 'unlimited', 'decimal32', \
         'decimal64', 'decimal128')",
    )
}

/// Java's `RoundingMode`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Rounding {
    Up,
    Down,
    Ceiling,
    Floor,
    HalfUp,
    HalfDown,
    HalfEven,
    Unnecessary,
}

/// A compiled `ToBigDecimal`.
#[derive(Debug, Clone)]
pub(crate) enum ToDecimal {
    /// `BigDecimal.valueOf(long, scale)`.
    Scaled(i32),
    /// `new BigDecimal(value, new MathContext(precision, rounding))`;
    /// precision 0 is `MathContext.UNLIMITED`.
    Context { precision: u32, rounding: Rounding },
}

/// A decimal as Java keeps it: `(-1)^negative * digits * 10^-scale`.
#[derive(Debug, Clone, PartialEq)]
struct Decimal {
    negative: bool,
    /// The coefficient's decimal digits, most significant first, no leading
    /// zero but for zero itself (`[0]`).
    digits: Vec<u8>,
    scale: i64,
}

impl Decimal {
    fn of_i64(v: i64, scale: i64) -> Decimal {
        let digits = v
            .unsigned_abs()
            .to_string()
            .bytes()
            .map(|b| b - b'0')
            .collect();
        Decimal {
            negative: v < 0,
            digits,
            scale,
        }
    }

    /// `new BigDecimal(double)`: the double's exact binary value in decimal.
    fn of_f64(v: f64) -> Option<Decimal> {
        if !v.is_finite() {
            return None;
        }
        let bits = v.to_bits();
        let negative = bits >> 63 == 1;
        let exp_bits = ((bits >> 52) & 0x7ff) as i64;
        let frac = bits & ((1 << 52) - 1);
        let (mut m, mut e) = if exp_bits == 0 {
            (frac, -1074)
        } else {
            (frac | 1 << 52, exp_bits - 1075)
        };
        if m == 0 {
            return Some(Decimal::of_i64(0, 0));
        }
        while m & 1 == 0 {
            m >>= 1;
            e += 1;
        }
        let mut digits: Vec<u8> = m.to_string().bytes().map(|b| b - b'0').collect();
        let scale = if e >= 0 {
            (0..e).for_each(|_| mul_small(&mut digits, 2));
            0
        } else {
            // m * 2^e = m * 5^-e / 10^-e.
            (0..-e).for_each(|_| mul_small(&mut digits, 5));
            -e
        };
        Some(Decimal {
            negative,
            digits,
            scale,
        })
    }

    /// `new BigDecimal(String)`: `[+-]digits[.digits][e[+-]digits]`.
    fn parse(s: &str) -> Option<Decimal> {
        let (negative, rest) = match s.as_bytes().first()? {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let (num, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
            None => (rest, 0),
        };
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        if int.is_empty() && frac.is_empty()
            || !(int.bytes().chain(frac.bytes())).all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let mut digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
        let lead = digits.iter().take_while(|d| **d == 0).count();
        digits.drain(..lead.min(digits.len() - 1));
        Some(Decimal {
            negative,
            digits,
            scale: frac.len() as i64 - exp,
        })
    }

    fn is_zero(&self) -> bool {
        self.digits == [0]
    }

    /// Rounded to `precision` significant digits (0: unlimited), as
    /// `BigDecimal.doRound`: again when a carry adds a digit. `None` when
    /// `Unnecessary` would have to round (Java's `ArithmeticException`).
    fn round(mut self, precision: u32, mode: Rounding) -> Option<Decimal> {
        let p = precision as usize;
        while p > 0 && self.digits.len() > p {
            let drop = self.digits.len() - p;
            let dropped = self.digits.split_off(p);
            self.scale -= drop as i64;
            let first = dropped[0];
            let rest_zero = dropped[1..].iter().all(|d| *d == 0);
            let any = first != 0 || !rest_zero;
            let odd = self.digits[p - 1] % 2 == 1;
            let half = first == 5 && rest_zero;
            let up = match mode {
                Rounding::Up => any,
                Rounding::Down => false,
                Rounding::Ceiling => any && !self.negative,
                Rounding::Floor => any && self.negative,
                Rounding::HalfUp => first >= 5,
                Rounding::HalfDown => first > 5 || first == 5 && !rest_zero,
                Rounding::HalfEven => first > 5 || first == 5 && !rest_zero || half && odd,
                Rounding::Unnecessary if any => return None,
                Rounding::Unnecessary => false,
            };
            if up {
                add_one(&mut self.digits);
            }
        }
        if self.is_zero() {
            self.negative = false;
        }
        Some(self)
    }
}

/// `digits *= k` in place.
fn mul_small(digits: &mut Vec<u8>, k: u8) {
    let mut carry = 0u16;
    for d in digits.iter_mut().rev() {
        let x = u16::from(*d) * u16::from(k) + carry;
        *d = (x % 10) as u8;
        carry = x / 10;
    }
    while carry > 0 {
        digits.insert(0, (carry % 10) as u8);
        carry /= 10;
    }
}

/// `digits += 1` in place.
fn add_one(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, 1);
}

impl std::fmt::Display for Decimal {
    /// `BigDecimal.toString()`: plain when the scale is not negative and the
    /// adjusted exponent is at least -6, else scientific (`1.3E+4`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d: String = self.digits.iter().map(|d| char::from(b'0' + d)).collect();
        let len = d.len() as i64;
        let adjusted = -self.scale + (len - 1);
        if self.negative {
            f.write_str("-")?;
        }
        if self.scale >= 0 && adjusted >= -6 {
            let s = self.scale;
            if s == 0 {
                f.write_str(&d)
            } else if len > s {
                let (a, b) = d.split_at((len - s) as usize);
                write!(f, "{a}.{b}")
            } else {
                write!(f, "0.{}{d}", "0".repeat((s - len) as usize))
            }
        } else {
            let (a, b) = d.split_at(1);
            let sign = if adjusted > 0 { "+" } else { "" };
            if b.is_empty() {
                write!(f, "{a}E{sign}{adjusted}")
            } else {
                write!(f, "{a}.{b}E{sign}{adjusted}")
            }
        }
    }
}

impl ToDecimal {
    pub(crate) fn apply(&self, v: Value) -> Value {
        let dec = match (self, v) {
            (ToDecimal::Scaled(scale), v) => Some(Decimal::of_i64(int(&v), i64::from(*scale))),
            (ToDecimal::Context { .. }, Value::Str(s)) => Decimal::parse(s.trim()),
            (ToDecimal::Context { .. }, Value::F64(x)) => Decimal::of_f64(x),
            (ToDecimal::Context { .. }, Value::F32(x)) => Decimal::of_f64(f64::from(x)),
            (ToDecimal::Context { .. }, v) => Some(Decimal::of_i64(int(&v), 0)),
        };
        let dec = match (self, dec) {
            (
                ToDecimal::Context {
                    precision,
                    rounding,
                },
                Some(d),
            ) => d.round(*precision, *rounding),
            (_, d) => d,
        };
        // What Java throws on (text that is no number, a NaN, a rounding
        // `UNNECESSARY` refuses) has no decimal: the value is the text `NaN`.
        Value::Str(dec.map_or_else(|| "NaN".to_string(), |d| d.to_string()))
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::I64(i) => *i,
        other => other.as_u64() as i64,
    }
}

/// NB5's `MathContextReader.getMathContext`: a named context, or Java's
/// `new MathContext(String)` form `precision=N roundingMode=MODE`.
fn math_context(spec: &str) -> Option<(u32, Rounding)> {
    Some(match spec.to_lowercase().as_str() {
        "unlimited" => (0, Rounding::HalfUp),
        "decimal32" => (7, Rounding::HalfEven),
        "decimal64" => (16, Rounding::HalfEven),
        "decimal128" => (34, Rounding::HalfEven),
        _ => {
            let rest = spec.strip_prefix("precision=")?;
            let (p, mode) = rest.split_once(" roundingMode=")?;
            let p: u32 = p.parse().ok()?;
            let mode = match mode {
                "UP" => Rounding::Up,
                "DOWN" => Rounding::Down,
                "CEILING" => Rounding::Ceiling,
                "FLOOR" => Rounding::Floor,
                "HALF_UP" => Rounding::HalfUp,
                "HALF_DOWN" => Rounding::HalfDown,
                "HALF_EVEN" => Rounding::HalfEven,
                "UNNECESSARY" => Rounding::Unnecessary,
                _ => return None,
            };
            (p, mode)
        }
    })
}

/// Compiles a function of this file, or `None` when `name` is not one of them.
pub(crate) fn compile(cx: &Ctx<'_>, input: Kind) -> Option<Result<(Func, Kind), BindingError>> {
    NAMES.contains(&cx.name).then(|| compile_known(cx, input))
}

fn compile_known(cx: &Ctx<'_>, input: Kind) -> Result<(Func, Kind), BindingError> {
    cx.arity(0, 1)?;
    if !(input.is_int() || input == Kind::F64 || input == Kind::Str) {
        return Err(BindingError::TypeMismatch {
            binding: cx.binding.to_string(),
            at: cx.call.at,
            function: cx.name.to_string(),
            takes: "an integer, a float or a string",
            gets: input,
        });
    }
    let f = match cx.call.args.first() {
        None if input.is_int() => ToDecimal::Scaled(0),
        None => ToDecimal::Context {
            precision: 0,
            rounding: Rounding::HalfUp,
        },
        Some(Arg::Int(scale, at)) => {
            if !input.is_int() {
                return Err(cx.bad(
                    *at,
                    "takes a scale only over an integer, as NB5 (its float and string forms \
                     take a MathContext)",
                ));
            }
            ToDecimal::Scaled(
                i32::try_from(*scale).map_err(|_| cx.bad(*at, "needs an int scale (32 bits)"))?,
            )
        }
        Some(Arg::Str(spec, at)) => {
            let (precision, rounding) = math_context(spec).ok_or_else(|| {
                cx.bad(
                    *at,
                    format!(
                        "cannot read the MathContext `{spec}`: NB5 reads `precision=N \
                         roundingMode=MODE` (UP, DOWN, CEILING, FLOOR, HALF_UP, HALF_DOWN, \
                         HALF_EVEN, UNNECESSARY)"
                    ),
                )
            })?;
            ToDecimal::Context {
                precision,
                rounding,
            }
        }
        Some(other) => return Err(cx.wrong(0, other, "an integer scale or a MathContext")),
    };
    Ok((Func::Decimal(Box::new(f)), Kind::Str))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(spec: &str) -> ToDecimal {
        let (precision, rounding) = math_context(spec).unwrap();
        ToDecimal::Context {
            precision,
            rounding,
        }
    }

    fn s(f: &ToDecimal, v: Value) -> String {
        f.apply(v).to_string()
    }

    /// Java's `BigDecimal.valueOf(v, scale).toString()` and
    /// `new BigDecimal(v, mc).toString()`, worked from the JDK's rules.
    #[test]
    fn decimals_print_as_java_s_big_decimal() {
        assert_eq!(s(&ToDecimal::Scaled(0), Value::U64(12_345)), "12345");
        assert_eq!(s(&ToDecimal::Scaled(3), Value::U64(12_345)), "12.345");
        assert_eq!(s(&ToDecimal::Scaled(3), Value::U64(5)), "0.005");
        assert_eq!(s(&ToDecimal::Scaled(3), Value::U64(0)), "0.000");
        // Adjusted exponent -7: scientific.
        assert_eq!(s(&ToDecimal::Scaled(7), Value::U64(1)), "1E-7");
        assert_eq!(s(&ToDecimal::Scaled(-2), Value::I64(-13)), "-1.3E+3");
        // 12345 to 2 digits, UP: 13 * 10^3.
        assert_eq!(
            s(&ctx("precision=2 roundingMode=UP"), Value::U64(12_345)),
            "1.3E+4"
        );
        assert_eq!(
            s(&ctx("precision=3 roundingMode=CEILING"), Value::U64(12_001)),
            "1.21E+4"
        );
        assert_eq!(
            s(&ctx("precision=3 roundingMode=FLOOR"), Value::I64(-12_001)),
            "-1.21E+4"
        );
        // A carry adds a digit: rounded again (9995 -> 1000 -> 100 * 10^2).
        assert_eq!(
            s(&ctx("precision=3 roundingMode=HALF_UP"), Value::U64(9_995)),
            "1.00E+4"
        );
        // HALF_EVEN: a tie goes to the even digit.
        let even = ctx("precision=1 roundingMode=HALF_EVEN");
        assert_eq!(s(&even, Value::U64(25)), "2E+1");
        assert_eq!(s(&even, Value::U64(35)), "4E+1");
        assert_eq!(s(&even, Value::U64(251)), "3E+2");
        assert_eq!(
            s(&ctx("precision=1 roundingMode=HALF_DOWN"), Value::U64(25)),
            "2E+1"
        );
        assert_eq!(s(&ctx("unlimited"), Value::U64(25)), "25");
        // new BigDecimal(double): the binary value exactly.
        assert_eq!(s(&ctx("unlimited"), Value::F64(0.5)), "0.5");
        assert_eq!(s(&ctx("unlimited"), Value::F64(2.0)), "2");
        assert_eq!(
            s(&ctx("unlimited"), Value::F64(0.1)),
            "0.1000000000000000055511151231257827021181583404541015625"
        );
        assert_eq!(
            s(&ctx("precision=5 roundingMode=HALF_EVEN"), Value::F64(0.1)),
            "0.10000"
        );
        // new BigDecimal(String, mc).
        assert_eq!(
            s(&ctx("unlimited"), Value::Str("12345.54321".into())),
            "12345.54321"
        );
        assert_eq!(
            s(
                &ctx("precision=7 roundingMode=UP"),
                Value::Str("12345.54321".into())
            ),
            "12345.55"
        );
        assert_eq!(s(&ctx("unlimited"), Value::Str("-1.5e3".into())), "-1.5E+3");
        assert_eq!(s(&ctx("unlimited"), Value::Str("x".into())), "NaN");
        assert!(math_context("precision=2 roundingMode=SIDEWAYS").is_none());
    }
}
