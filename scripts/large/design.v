// A small datapath for the large-program runs: a 16-bit LFSR feeding a multiply-accumulate unit
// and a comparator tree, synthesised by Yosys and placed and routed by nextpnr.
module design (
    input  wire        clk,
    input  wire        rst,
    input  wire [7:0]  din,
    output reg  [15:0] acc,
    output wire [3:0]  max_idx
);
    reg [15:0] lfsr;
    reg [7:0]  window [0:7];
    integer i;
    always @(posedge clk) begin
        if (rst) begin
            lfsr <= 16'hace1;
            acc <= 0;
        end else begin
            lfsr <= {lfsr[14:0], lfsr[15] ^ lfsr[13] ^ lfsr[12] ^ lfsr[10]};
            acc <= acc + (lfsr[7:0] * din);
        end
        window[0] <= din ^ lfsr[15:8];
        for (i = 1; i < 8; i = i + 1)
            window[i] <= window[i - 1];
    end
    // Index of the largest entry of the window.
    reg [3:0] best;
    reg [7:0] best_value;
    always @* begin
        best = 0;
        best_value = window[0];
        for (i = 1; i < 8; i = i + 1)
            if (window[i] > best_value) begin
                best = i;
                best_value = window[i];
            end
    end
    assign max_idx = best;
endmodule
