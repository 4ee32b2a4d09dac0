"""Makes the int8 variant of an fp32 ONNX encoder (`onnx/model_quantized.onnx`, for
EMBEDDING_QUANTIZED): dynamic quantization of the MatMul and Gather weights, per channel, as
Xenova's `model_quantized.onnx` exports are made. Usage: quantize_int8.py IN.onnx OUT.onnx
"""
import logging
import sys

from onnxruntime.quantization import QuantType, quantize_dynamic

logging.disable(logging.WARNING)  # ORT's "please run pre-processing" advice is noise here
quantize_dynamic(sys.argv[1], sys.argv[2], weight_type=QuantType.QInt8,
                 op_types_to_quantize=["MatMul", "Gather"], per_channel=True)
