// The paper's Table 2 conditions (Gessler & Schneider, §4.2) and what each implies for the builder. A condition is
// objective letters (M = MLM, X = XPOS tagging, P/T = SynCLM phrase/tree losses) and optionally
// "-<SUFFIX>" naming a registered attention variant (-SLA = syntax-aware local attention, "sla").
// Per condition: `objectives`, `attention` (the models.attention registry name, null = plain) and
// `encoder_needs_parse` (the attention reads a parse, so fine-tuning is given the corpus parser's).
// `related`: the conditions of the related-biases table, next to µB-M and random-init:
// Edman et al.'s band attention M-A<c> (attention "band<c>", on at fine-tuning too) and
// limited-context MLM C<c> (the objective letter C with its window size), and H, MLM on the soft
// labels of a trigram LM (the builder adds its build_trigram_model step). Another bias adds its
// names there and its rows to `by_name`; the table lists them by name.
// tests/test_conditions.py holds this table to models.conditions.parse_condition.
local plain(objectives) = { objectives: objectives, attention: null, encoder_needs_parse: false };
local band(context) = { objectives: "M", attention: "band" + context, encoder_needs_parse: false };
local sla(objectives) = { objectives: objectives, attention: "sla", encoder_needs_parse: true };
// Related biases, not Table 2 rows: -G = syntax-guided attention (Ahmad et al., 2021, §2.2-2.3;
// "syntax_gat"), S = its structural-probe loss.
local gat(objectives) = { objectives: objectives, attention: "syntax_gat", encoder_needs_parse: true };
{
  names: ["M", "MP", "MT", "MPT", "MPT-SLA", "MX", "MXP", "MXT", "MXPT", "MXPT-SLA"],
  by_name: {
    M: plain("M"),
    MP: plain("MP"),
    MT: plain("MT"),
    MPT: plain("MPT"),
    "MPT-SLA": sla("MPT"),
    MX: plain("MX"),
    MXP: plain("MXP"),
    MXT: plain("MXT"),
    MXPT: plain("MXPT"),
    "MXPT-SLA": sla("MXPT"),
    "M-A5": band(5),
    "M-A9": band(9),
    "M-A13": band(13),
    C5: plain("C5"),
    C9: plain("C9"),
    C13: plain("C13"),
    H: plain("H"),
    "M-G": gat("M"),
    "MS-G": gat("MS"),
  },
  related: ["M-A5", "M-A9", "M-A13", "C5", "C9", "C13", "H", "M-G", "MS-G"],
}
