"""Chat answer quality: does /chat's answer carry a gold answer string and cite the gold document?"""
